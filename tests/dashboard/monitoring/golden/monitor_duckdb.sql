WITH "t4" AS (
  SELECT
    "t3"."message_id",
    MIN("t3"."ts") AS "ts",
    COUNT("t3"."memory_id") AS "rows",
    MAX("t3"."score") AS "top1",
    SUM(CASE WHEN "t3"."score" >= 0.35 THEN 1 ELSE 0 END) AS "kept",
    SUM(CASE WHEN "t3"."memory_id" IS NOT NULL THEN "t3"."repeats" - 1 ELSE 0 END) AS "merged",
    SUM("t3"."repeats") AS "raw"
  FROM (
    SELECT
      "t2"."message_id",
      "t2"."memory_id",
      MIN("t2"."score") AS "score",
      COUNT(*) AS "repeats",
      MIN("t2"."ts") AS "ts"
    FROM (
      SELECT
        CASE WHEN "t1"."problem" IS NULL THEN "t1"."message_id" ELSE CAST(NULL AS TEXT) END AS "message_id",
        "t1"."memory_id",
        CASE WHEN "t1"."problem" IS NULL THEN "t1"."score" ELSE CAST(NULL AS DOUBLE) END AS "score",
        CASE WHEN "t1"."problem" IS NULL THEN "t1"."ts" ELSE CAST(NULL AS TIMESTAMPTZ) END AS "ts",
        "t1"."problem"
      FROM (
        SELECT
          "t0"."message_id",
          "t0"."memory_id",
          "t0"."score",
          "t0"."timestamp" AS "ts",
          CASE
            WHEN "t0"."message_id" IS NULL
            THEN 'message_id'
            WHEN (
              "t0"."memory_id" IS NULL
            ) AND (
              "t0"."score" IS NOT NULL
            )
            THEN 'memory_id'
            WHEN NOT (
              COALESCE("t0"."score", 0.0) BETWEEN -1.7976931348623157E+308 AND 1.7976931348623157e+308
            )
            THEN 'score'
            WHEN (
              "t0"."timestamp" IS NOT NULL
            )
            AND (
              (
                "t0"."timestamp" < MAKE_TIMESTAMPTZ(1970, 1, 1, 0, 0, 0.0, 'UTC')
              )
              OR (
                "t0"."timestamp" >= MAKE_TIMESTAMPTZ(2200, 1, 1, 0, 0, 0.0, 'UTC')
              )
            )
            THEN 'timestamp'
            ELSE CAST(NULL AS TEXT)
          END AS "problem"
        FROM "retrievals" AS "t0"
      ) AS "t1"
    ) AS "t2"
    GROUP BY
      1,
      2
  ) AS "t3"
  GROUP BY
    1
)
SELECT
  *
FROM (
  SELECT
    "t11"."bad",
    "t11"."window",
    "t11"."bin",
    COUNT(*) AS "turns",
    SUM("t11"."rows") AS "rows",
    SUM(
      CASE
        WHEN (
          "t11"."top1" IS NULL
        ) OR (
          "t11"."top1" < "t11"."at"
        )
        THEN 1
        ELSE 0
      END
    ) AS "no_memory",
    SUM("t11"."kept") AS "kept",
    SUM(CASE WHEN ABS("t11"."top1" - "t11"."at") <= 0.02 THEN 1 ELSE 0 END) AS "near",
    SUM(CASE WHEN "t11"."rows" = 0 THEN 1 ELSE 0 END) AS "empty",
    SUM("t11"."merged") AS "merged",
    SUM("t11"."raw") AS "raw",
    MIN("t11"."low") AS "low",
    MAX("t11"."high") AS "high"
  FROM (
    SELECT
      "t10"."message_id",
      "t10"."ts",
      "t10"."rows",
      "t10"."top1",
      "t10"."kept",
      "t10"."merged",
      "t10"."raw",
      "t10"."low",
      "t10"."high",
      "t10"."message_id" IS NULL AS "bad",
      CASE
        WHEN NOT (
          "t10"."message_id" IS NULL
        ) AND (
          "t10"."ts" IS NOT NULL
        )
        THEN CAST(FLOOR((
          EPOCH(CAST("t10"."ts" AS TIMESTAMP)) - 0
        ) / (
          86400
        )) AS BIGINT)
        ELSE CAST(NULL AS BIGINT)
      END AS "window",
      CASE
        WHEN NOT (
          "t10"."message_id" IS NULL
        )
        AND (
          "t10"."ts" IS NOT NULL
        )
        AND (
          "t10"."top1" IS NOT NULL
        )
        THEN LEAST(
          CAST(FLOOR(
            (
              "t10"."top1" - "t10"."low"
            ) / CASE
              WHEN "t10"."high" > "t10"."low"
              THEN (
                "t10"."high" - "t10"."low"
              ) / 2000
              ELSE 1.0
            END
          ) AS BIGINT),
          1999
        )
        ELSE CAST(NULL AS BIGINT)
      END AS "bin",
      0.35 AS "at"
    FROM (
      SELECT
        "t6"."message_id",
        "t6"."ts",
        "t6"."rows",
        "t6"."top1",
        "t6"."kept",
        "t6"."merged",
        "t6"."raw",
        "t9"."low",
        "t9"."high"
      FROM "t4" AS "t6"
      CROSS JOIN (
        SELECT
          MIN("t7"."top1") AS "low",
          MAX("t7"."top1") AS "high"
        FROM (
          SELECT
            *
          FROM "t4" AS "t5"
          WHERE
            NOT (
              "t5"."message_id" IS NULL
            ) AND "t5"."ts" IS NOT NULL
        ) AS "t7"
      ) AS "t9"
    ) AS "t10"
  ) AS "t11"
  GROUP BY
    1,
    2,
    3
) AS "t12"
ORDER BY
  "t12"."window" ASC,
  "t12"."bin" ASC
