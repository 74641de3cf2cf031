WITH "t3" AS (
  SELECT
    "t2"."message_id" AS "message_id",
    MIN("t2"."ts") AS "ts",
    COUNT("t2"."memory_id") AS "rows",
    MAX("t2"."score") AS "top1",
    SUM(CASE WHEN "t2"."score" >= 0.35 THEN 1 ELSE 0 END) AS "kept",
    SUM(CASE WHEN isNotNull("t2"."memory_id") THEN "t2"."repeats" - 1 ELSE 0 END) AS "merged",
    SUM("t2"."repeats") AS "raw"
  FROM (
    SELECT
      "t1"."message_id" AS "message_id",
      "t1"."memory_id" AS "memory_id",
      MIN("t1"."score") AS "score",
      COUNT(*) AS "repeats",
      MIN("t1"."ts") AS "ts"
    FROM (
      SELECT
        CASE
          WHEN isNotNull("t0"."message_id")
          AND (
            isNull("t0"."memory_id") OR isNotNull("t0"."score")
          )
          THEN "t0"."message_id"
          ELSE CAST(NULL AS Nullable(String))
        END AS "message_id",
        "t0"."memory_id" AS "memory_id",
        "t0"."score" AS "score",
        "t0"."timestamp" AS "ts"
      FROM "retrievals" AS "t0"
    ) AS "t1"
    GROUP BY
      "t1"."message_id",
      "t1"."memory_id"
  ) AS "t2"
  GROUP BY
    "t2"."message_id"
)
SELECT
  *
FROM (
  SELECT
    "t10"."bad" AS "bad",
    "t10"."window" AS "window",
    "t10"."bin" AS "bin",
    COUNT(*) AS "turns",
    SUM("t10"."rows") AS "rows",
    SUM(CASE WHEN isNull("t10"."top1") OR (
      "t10"."top1" < 0.35
    ) THEN 1 ELSE 0 END) AS "no_memory",
    SUM("t10"."kept") AS "kept",
    SUM(CASE WHEN ABS("t10"."top1" - 0.35) <= 0.02 THEN 1 ELSE 0 END) AS "near",
    SUM(CASE WHEN "t10"."rows" = 0 THEN 1 ELSE 0 END) AS "empty",
    SUM("t10"."merged") AS "merged",
    SUM("t10"."raw") AS "raw",
    MIN("t10"."low") AS "low",
    MAX("t10"."high") AS "high"
  FROM (
    SELECT
      "t9"."message_id" AS "message_id",
      "t9"."ts" AS "ts",
      "t9"."rows" AS "rows",
      "t9"."top1" AS "top1",
      "t9"."kept" AS "kept",
      "t9"."merged" AS "merged",
      "t9"."raw" AS "raw",
      "t9"."low" AS "low",
      "t9"."high" AS "high",
      isNull("t9"."message_id") AS "bad",
      CASE
        WHEN NOT (
          isNull("t9"."message_id")
        ) AND isNotNull("t9"."ts")
        THEN CAST(FLOOR((
          toRelativeSecondNum("t9"."ts") - 0
        ) / (
          86400
        )) AS Nullable(Int64))
        ELSE CAST(NULL AS Nullable(Int64))
      END AS "window",
      CASE
        WHEN NOT (
          isNull("t9"."message_id")
        )
        AND isNotNull("t9"."ts")
        AND isNotNull("t9"."top1")
        THEN LEAST(
          CAST(FLOOR(
            (
              "t9"."top1" - "t9"."low"
            ) / CASE
              WHEN "t9"."high" > "t9"."low"
              THEN (
                "t9"."high" - "t9"."low"
              ) / 2000
              ELSE 1.0
            END
          ) AS Nullable(Int64)),
          1999
        )
        ELSE CAST(NULL AS Nullable(Int64))
      END AS "bin"
    FROM (
      SELECT
        "t5"."message_id" AS "message_id",
        "t5"."ts" AS "ts",
        "t5"."rows" AS "rows",
        "t5"."top1" AS "top1",
        "t5"."kept" AS "kept",
        "t5"."merged" AS "merged",
        "t5"."raw" AS "raw",
        "t8"."low" AS "low",
        "t8"."high" AS "high"
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
              isNull("t4"."message_id")
            ) AND isNotNull("t4"."ts")
        ) AS "t6"
      ) AS "t8"
    ) AS "t9"
  ) AS "t10"
  GROUP BY
    "t10"."bad",
    "t10"."window",
    "t10"."bin"
) AS "t11"
ORDER BY
  "t11"."window" ASC,
  "t11"."bin" ASC
