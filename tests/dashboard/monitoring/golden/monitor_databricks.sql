WITH `t4` AS (
  SELECT
    `t3`.`message_id`,
    MIN(`t3`.`ts`) AS `ts`,
    COUNT(`t3`.`memory_id`) AS `rows`,
    MAX(`t3`.`score`) AS `top1`,
    SUM(IF(`t3`.`score` >= 0.35, 1, 0)) AS `kept`,
    SUM(IF(`t3`.`memory_id` IS NOT NULL, `t3`.`repeats` - 1, 0)) AS `merged`,
    SUM(`t3`.`repeats`) AS `raw`
  FROM (
    SELECT
      `t2`.`message_id`,
      `t2`.`memory_id`,
      MIN(`t2`.`score`) AS `score`,
      COUNT(*) AS `repeats`,
      MIN(`t2`.`ts`) AS `ts`
    FROM (
      SELECT
        IF(`t1`.`problem` IS NULL, `t1`.`message_id`, CAST(NULL AS STRING)) AS `message_id`,
        `t1`.`memory_id`,
        IF(`t1`.`problem` IS NULL, `t1`.`score`, CAST(NULL AS DOUBLE)) AS `score`,
        IF(`t1`.`problem` IS NULL, `t1`.`ts`, CAST(NULL AS TIMESTAMP)) AS `ts`,
        `t1`.`problem`
      FROM (
        SELECT
          `t0`.`message_id`,
          `t0`.`memory_id`,
          `t0`.`score`,
          `t0`.`timestamp` AS `ts`,
          CASE
            WHEN `t0`.`message_id` IS NULL
            THEN 'message_id'
            WHEN (
              `t0`.`memory_id` IS NULL
            )
            AND (
              `t0`.`score` IS NOT NULL AND NOT ISNAN(`t0`.`score`)
            )
            THEN 'memory_id'
            WHEN NOT (
              COALESCE(`t0`.`score`, 0.0) BETWEEN -1.7976931348623157E+308 AND 1.7976931348623157e+308
            )
            THEN 'score'
            WHEN (
              `t0`.`timestamp` IS NOT NULL
            )
            AND (
              (
                `t0`.`timestamp` < CAST('1970-01-01T00:00:00+00:00' AS TIMESTAMP)
              )
              OR (
                `t0`.`timestamp` >= CAST('2200-01-01T00:00:00+00:00' AS TIMESTAMP)
              )
            )
            THEN 'timestamp'
            ELSE CAST(NULL AS STRING)
          END AS `problem`
        FROM `retrievals` AS `t0`
      ) AS `t1`
    ) AS `t2`
    GROUP BY
      1,
      2
  ) AS `t3`
  GROUP BY
    1
)
SELECT
  *
FROM (
  SELECT
    `t11`.`bad`,
    `t11`.`window`,
    `t11`.`bin`,
    COUNT(*) AS `turns`,
    SUM(`t11`.`rows`) AS `rows`,
    SUM(
      IF(`t11`.`top1` IS NULL OR ISNAN(`t11`.`top1`) OR (
        `t11`.`top1` < `t11`.`at`
      ), 1, 0)
    ) AS `no_memory`,
    SUM(`t11`.`kept`) AS `kept`,
    SUM(IF(ABS(`t11`.`top1` - `t11`.`at`) <= 0.02, 1, 0)) AS `near`,
    SUM(IF(`t11`.`rows` = 0, 1, 0)) AS `empty`,
    SUM(`t11`.`merged`) AS `merged`,
    SUM(`t11`.`raw`) AS `raw`,
    MIN(`t11`.`low`) AS `low`,
    MAX(`t11`.`high`) AS `high`
  FROM (
    SELECT
      `t10`.`message_id`,
      `t10`.`ts`,
      `t10`.`rows`,
      `t10`.`top1`,
      `t10`.`kept`,
      `t10`.`merged`,
      `t10`.`raw`,
      `t10`.`low`,
      `t10`.`high`,
      `t10`.`message_id` IS NULL AS `bad`,
      IF(
        NOT (
          `t10`.`message_id` IS NULL
        ) AND (
          `t10`.`ts` IS NOT NULL
        ),
        CAST(FLOOR((
          UNIX_TIMESTAMP(CAST(`t10`.`ts` AS TIMESTAMP)) - 0
        ) / (
          86400
        )) AS BIGINT),
        CAST(NULL AS BIGINT)
      ) AS `window`,
      IF(
        NOT (
          `t10`.`message_id` IS NULL
        )
        AND (
          `t10`.`ts` IS NOT NULL
        )
        AND (
          `t10`.`top1` IS NOT NULL AND NOT ISNAN(`t10`.`top1`)
        ),
        LEAST(
          CAST(FLOOR(
            TRY_DIVIDE(
              `t10`.`top1` - `t10`.`low`,
              IF(`t10`.`high` > `t10`.`low`, TRY_DIVIDE(`t10`.`high` - `t10`.`low`, 2000), 1.0)
            )
          ) AS BIGINT),
          1999
        ),
        CAST(NULL AS BIGINT)
      ) AS `bin`,
      0.35 AS `at`
    FROM (
      SELECT
        `t6`.`message_id`,
        `t6`.`ts`,
        `t6`.`rows`,
        `t6`.`top1`,
        `t6`.`kept`,
        `t6`.`merged`,
        `t6`.`raw`,
        `t9`.`low`,
        `t9`.`high`
      FROM `t4` AS `t6`
      CROSS JOIN (
        SELECT
          MIN(`t7`.`top1`) AS `low`,
          MAX(`t7`.`top1`) AS `high`
        FROM (
          SELECT
            *
          FROM `t4` AS `t5`
          WHERE
            NOT (
              `t5`.`message_id` IS NULL
            ) AND `t5`.`ts` IS NOT NULL
        ) AS `t7`
      ) AS `t9`
    ) AS `t10`
  ) AS `t11`
  GROUP BY
    1,
    2,
    3
) AS `t12`
ORDER BY
  `t12`.`window` ASC NULLS LAST,
  `t12`.`bin` ASC NULLS LAST
