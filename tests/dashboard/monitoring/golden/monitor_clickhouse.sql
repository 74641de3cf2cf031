WITH "t4" AS (
  SELECT
    "t3"."message_id" AS "message_id",
    MIN("t3"."ts") AS "ts",
    COUNT("t3"."memory_id") AS "rows",
    MAX("t3"."score") AS "top1",
    SUM(CASE WHEN "t3"."score" >= 0.35 THEN 1 ELSE 0 END) AS "kept",
    SUM(CASE WHEN isNotNull("t3"."memory_id") THEN "t3"."repeats" - 1 ELSE 0 END) AS "merged",
    SUM("t3"."repeats") AS "raw"
  FROM (
    SELECT
      "t2"."message_id" AS "message_id",
      "t2"."memory_id" AS "memory_id",
      MIN("t2"."score") AS "score",
      COUNT(*) AS "repeats",
      MIN("t2"."ts") AS "ts"
    FROM (
      SELECT
        CASE
          WHEN isNull("t1"."problem")
          THEN "t1"."message_id"
          ELSE CAST(NULL AS Nullable(String))
        END AS "message_id",
        "t1"."memory_id" AS "memory_id",
        CASE
          WHEN isNull("t1"."problem")
          THEN "t1"."score"
          ELSE CAST(NULL AS Nullable(Float64))
        END AS "score",
        CASE
          WHEN isNull("t1"."problem")
          THEN "t1"."ts"
          ELSE CAST(NULL AS Nullable(DateTime('UTC')))
        END AS "ts",
        "t1"."problem" AS "problem"
      FROM (
        SELECT
          "t0"."message_id" AS "message_id",
          "t0"."memory_id" AS "memory_id",
          "t0"."score" AS "score",
          "t0"."timestamp" AS "ts",
          CASE
            WHEN isNull("t0"."message_id")
            THEN 'message_id'
            WHEN isNull("t0"."memory_id") AND isNotNull("t0"."score")
            THEN 'memory_id'
            WHEN NOT (
              COALESCE("t0"."score", 0.0) BETWEEN -1.7976931348623157E+308 AND 1.7976931348623157e+308
            )
            THEN 'score'
            WHEN isNotNull("t0"."timestamp")
            AND (
              (
                "t0"."timestamp" < parseDateTimeBestEffort('1970-01-01T00:00:00+00:00', 'UTC')
              )
              OR (
                "t0"."timestamp" >= parseDateTimeBestEffort('2200-01-01T00:00:00+00:00', 'UTC')
              )
            )
            THEN 'timestamp'
            ELSE CAST(NULL AS Nullable(String))
          END AS "problem"
        FROM "retrievals" AS "t0"
      ) AS "t1"
    ) AS "t2"
    GROUP BY
      "t2"."message_id",
      "t2"."memory_id"
  ) AS "t3"
  GROUP BY
    "t3"."message_id"
)
SELECT
  *
FROM (
  SELECT
    "t11"."bad" AS "bad",
    "t11"."window" AS "window",
    "t11"."bin" AS "bin",
    COUNT(*) AS "turns",
    SUM("t11"."rows") AS "rows",
    SUM(
      CASE WHEN isNull("t11"."top1") OR (
        "t11"."top1" < "t11"."at"
      ) THEN 1 ELSE 0 END
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
      "t10"."message_id" AS "message_id",
      "t10"."ts" AS "ts",
      "t10"."rows" AS "rows",
      "t10"."top1" AS "top1",
      "t10"."kept" AS "kept",
      "t10"."merged" AS "merged",
      "t10"."raw" AS "raw",
      "t10"."low" AS "low",
      "t10"."high" AS "high",
      isNull("t10"."message_id") AS "bad",
      CASE
        WHEN NOT (
          isNull("t10"."message_id")
        ) AND isNotNull("t10"."ts")
        THEN CAST(FLOOR((
          toRelativeSecondNum("t10"."ts") - 0
        ) / (
          86400
        )) AS Nullable(Int64))
        ELSE CAST(NULL AS Nullable(Int64))
      END AS "window",
      CASE
        WHEN NOT (
          isNull("t10"."message_id")
        )
        AND isNotNull("t10"."ts")
        AND isNotNull("t10"."top1")
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
          ) AS Nullable(Int64)),
          1999
        )
        ELSE CAST(NULL AS Nullable(Int64))
      END AS "bin",
      0.35 AS "at"
    FROM (
      SELECT
        "t6"."message_id" AS "message_id",
        "t6"."ts" AS "ts",
        "t6"."rows" AS "rows",
        "t6"."top1" AS "top1",
        "t6"."kept" AS "kept",
        "t6"."merged" AS "merged",
        "t6"."raw" AS "raw",
        "t9"."low" AS "low",
        "t9"."high" AS "high"
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
              isNull("t5"."message_id")
            ) AND isNotNull("t5"."ts")
        ) AS "t7"
      ) AS "t9"
    ) AS "t10"
  ) AS "t11"
  GROUP BY
    "t11"."bad",
    "t11"."window",
    "t11"."bin"
) AS "t12"
ORDER BY
  "t12"."window" ASC,
  "t12"."bin" ASC
