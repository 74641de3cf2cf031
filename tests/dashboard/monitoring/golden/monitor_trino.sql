WITH "t3" AS (
  SELECT
    "t2"."message_id",
    MIN("t2"."ts") AS "ts",
    COUNT("t2"."memory_id") AS "rows",
    MAX("t2"."score") AS "top1",
    SUM(IF("t2"."score" >= CAST(0.35 AS DOUBLE), 1, 0)) AS "kept",
    SUM(IF("t2"."memory_id" IS NOT NULL, "t2"."repeats" - 1, 0)) AS "merged",
    SUM("t2"."repeats") AS "raw"
  FROM (
    SELECT
      "t1"."message_id",
      "t1"."memory_id",
      MIN("t1"."score") AS "score",
      COUNT(*) AS "repeats",
      MIN("t1"."ts") AS "ts"
    FROM (
      SELECT
        IF(
          (
            "t0"."message_id" IS NOT NULL
          )
          AND (
            (
              "t0"."memory_id" IS NULL
            ) OR (
              "t0"."score" IS NOT NULL
            )
          ),
          "t0"."message_id",
          CAST(NULL AS VARCHAR)
        ) AS "message_id",
        "t0"."memory_id",
        "t0"."score",
        "t0"."timestamp" AS "ts"
      FROM "retrievals" AS "t0"
    ) AS "t1"
    GROUP BY
      1,
      2
  ) AS "t2"
  GROUP BY
    1
)
SELECT
  *
FROM (
  SELECT
    "t10"."bad",
    "t10"."window",
    "t10"."bin",
    COUNT(*) AS "turns",
    SUM("t10"."rows") AS "rows",
    SUM(
      IF((
        "t10"."top1" IS NULL
      ) OR (
        "t10"."top1" < CAST(0.35 AS DOUBLE)
      ), 1, 0)
    ) AS "no_memory",
    SUM("t10"."kept") AS "kept",
    SUM(IF(ABS("t10"."top1" - CAST(0.35 AS DOUBLE)) <= CAST(0.02 AS DOUBLE), 1, 0)) AS "near",
    SUM(IF("t10"."rows" = 0, 1, 0)) AS "empty",
    SUM("t10"."merged") AS "merged",
    SUM("t10"."raw") AS "raw",
    MIN("t10"."low") AS "low",
    MAX("t10"."high") AS "high"
  FROM (
    SELECT
      "t9"."message_id",
      "t9"."ts",
      "t9"."rows",
      "t9"."top1",
      "t9"."kept",
      "t9"."merged",
      "t9"."raw",
      "t9"."low",
      "t9"."high",
      "t9"."message_id" IS NULL AS "bad",
      IF(
        NOT (
          "t9"."message_id" IS NULL
        ) AND (
          "t9"."ts" IS NOT NULL
        ),
        CAST(FLOOR(CAST((
          TO_UNIXTIME("t9"."ts") - 0
        ) AS DOUBLE) / (
          86400
        )) AS BIGINT),
        CAST(NULL AS BIGINT)
      ) AS "window",
      IF(
        NOT (
          "t9"."message_id" IS NULL
        )
        AND (
          "t9"."ts" IS NOT NULL
        )
        AND (
          "t9"."top1" IS NOT NULL
        ),
        LEAST(
          CAST(FLOOR(
            CAST((
              "t9"."top1" - "t9"."low"
            ) AS DOUBLE) / IF(
              "t9"."high" > "t9"."low",
              CAST((
                "t9"."high" - "t9"."low"
              ) AS DOUBLE) / 2000,
              CAST(1.0 AS DOUBLE)
            )
          ) AS BIGINT),
          1999
        ),
        CAST(NULL AS BIGINT)
      ) AS "bin"
    FROM (
      SELECT
        "t5"."message_id",
        "t5"."ts",
        "t5"."rows",
        "t5"."top1",
        "t5"."kept",
        "t5"."merged",
        "t5"."raw",
        "t8"."low",
        "t8"."high"
      FROM "t3" AS "t5"
      CROSS JOIN (
        SELECT
          MIN("t6"."top1") AS "low",
          MAX("t6"."top1") AS "high"
        FROM (
          SELECT
            *
          FROM "t3" AS "t4"
          WHERE
            NOT (
              "t4"."message_id" IS NULL
            ) AND "t4"."ts" IS NOT NULL
        ) AS "t6"
      ) AS "t8"
    ) AS "t9"
  ) AS "t10"
  GROUP BY
    1,
    2,
    3
) AS "t11"
ORDER BY
  "t11"."window" ASC,
  "t11"."bin" ASC
