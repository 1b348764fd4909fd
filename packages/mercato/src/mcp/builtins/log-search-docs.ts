/**
 * The text of `service://docs/log-search`: the log query language (src/logs/query.ts, docs/logs.md) as a compact
 * reference for AI clients, plus how service.logs.search applies it.
 */
export const LOG_SEARCH_DOCS = `# Log search

\`service.logs.search\` searches the log lines of one run of this shop.

Inputs: \`runId\` (required), \`query\` (this language; empty matches every line), \`levels\` (default info,warn,error),
\`context\` (default true), \`limit\` (default 50, at most 200). Results are newest first: \`{ runId, logs, total }\`; each
line has \`id, level, message, data, step, attempt, createdAt, context\` — \`context: true\` marks a line shown only around a match.

## Terms

| Term | Matches |
|---|---|
| \`timeout\` | lines whose message contains the text (case-insensitive) |
| \`"payment failed"\` | the exact phrase |
| \`/order-\\d+/\` or \`/Refund/i\` | a regular expression on the message (\`i\`: case-insensitive; at most 256 characters) |
| \`level:error\`, \`level:>=warn\` | a level, or levels at or above one (info < warn < error) |
| \`step:fetch\`, \`step:sync*\` | lines written inside a step (a trailing \`*\` matches a prefix) |
| \`attempt:2\`, \`attempt:>1\` | lines of an attempt |
| \`last:15m\` | lines of the last 30s, 15m, 2h, 7d, 1w... |
| \`from:2026-11-01\`, \`to:2026-11-01T08:30:00Z\` | time bounds (ISO 8601; inclusive) |
| \`orderId=1001\`, \`data.total>=100\`, \`customer.name="Ada"\`, \`paid=false\`, \`coupon!=null\` | fields of the line's data (dotted paths; \`= != > >= < <=\`; numbers, strings, true, false, null) |

## Combining

- Terms side by side must all match (\`AND\` may be written); \`OR\` between terms; parentheses group.
- \`-term\` or \`NOT term\` excludes.
- Example: \`level:>=warn (timeout OR /retry #\\d+/) -step:cleanup last:2h\`

## Context

\`C:n\` shows n lines before and after each match, \`B:n\` before only, \`A:n\` after only (0 to 20). They apply to the
whole query. With \`context: true\` and none of them in the query, the tool shows 2 lines on each side of a match;
\`context: false\` shows matches only.

## Limits

A query is at most 1000 characters and 64 terms. A malformed query is answered with error -32602 naming the position.
`;
