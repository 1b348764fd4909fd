/**
 * What `mercato check` says about an app TOML file (`shopify.app.toml`, `platform.app.toml`, or `shopify.apps.*.toml`)
 * next to the config: webhook subscriptions against the handlers, the mandatory compliance topics, and the API version
 * of the deliveries against the Admin GraphQL client's (docs/cli.md, "mercato check"). Warnings, not errors: the
 * platform CLI deploys the file, not Mercato. Each warning names the file and a line of it.
 */
import { parse as parseToml } from 'smol-toml';
import { BUILTIN_TOPICS, COMPLIANCE_TOPICS } from '../platform/webhook-flows.ts';

export interface TomlCheckInput {
  /** The file as shown in messages (project-relative). */
  path: string;
  text: string;
  /** The topics of the config's `webhooks` handlers. */
  handlerTopics: readonly string[];
  /** The Admin API version of the app's Admin GraphQL client (`shopify.apiVersion`, else Mercato's default). */
  apiVersion: string;
}

interface Subscription {
  topics: string[];
  complianceTopics: string[];
  uri: unknown;
  /** 1-based line of its `[[webhooks.subscriptions]]` header. */
  line: number;
}

const stringsOf = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/** The 1-based line of the first line matching `pattern` at or after `from`, else `fallback`. */
function lineOf(lines: readonly string[], pattern: RegExp, from = 1, fallback = 1): number {
  for (let i = Math.max(from, 1) - 1; i < lines.length; i++) if (pattern.test(lines[i])) return i + 1;
  return fallback;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
/** A TOML string holding exactly `value`, in either quote style. */
const quoted = (value: string) => new RegExp(`["']${escape(value)}["']`);

/** The warnings for one app TOML file (an empty list when it agrees with the config); a file that does not parse is one warning. */
export function tomlWarnings(input: TomlCheckInput): string[] {
  const { path, text, handlerTopics, apiVersion } = input;
  let data: Record<string, unknown>;
  try {
    data = parseToml(text) as Record<string, unknown>;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return [`${path}: could not be parsed as TOML (${reason}); its webhook subscriptions were not checked`];
  }
  const lines = text.split(/\r?\n/);
  const webhooksLine = lineOf(lines, /^\s*\[webhooks\]\s*(#.*)?$/);
  const webhooks = (typeof data.webhooks === 'object' && data.webhooks !== null ? data.webhooks : {}) as Record<string, unknown>;
  const headers: number[] = [];
  lines.forEach((l, i) => {
    if (/^\s*\[\[\s*webhooks\.subscriptions\s*\]\]/.test(l)) headers.push(i + 1);
  });
  const subscriptions: Subscription[] = (Array.isArray(webhooks.subscriptions) ? webhooks.subscriptions : []).map(
    (s: unknown, i: number) => {
      const entry = (typeof s === 'object' && s !== null ? s : {}) as Record<string, unknown>;
      return {
        topics: stringsOf(entry.topics),
        complianceTopics: stringsOf(entry.compliance_topics),
        uri: entry.uri,
        line: headers[i] ?? webhooksLine,
      };
    },
  );
  const warnings: string[] = [];
  const at = (line: number) => `${path}:${line}`;

  const subscribed = new Set(subscriptions.flatMap((s) => s.topics));
  // a missing topic belongs in the first subscription that has topics (else under [webhooks])
  const withTopics = subscriptions.find((s) => s.topics.length > 0);
  const topicsLine = withTopics ? lineOf(lines, /^\s*topics\s*=/, withTopics.line, withTopics.line) : webhooksLine;
  for (const topic of handlerTopics) {
    if (subscribed.has(topic)) continue;
    warnings.push(
      `${at(topicsLine)}: the config has a handler for "${topic}" but no [[webhooks.subscriptions]] lists it in \`topics\`: the platform never delivers it ` +
        `(add "${topic}" to a subscription's topics)`,
    );
  }
  const handled = new Set<string>([...handlerTopics, ...BUILTIN_TOPICS]);
  for (const s of subscriptions) {
    for (const topic of s.topics) {
      if (handled.has(topic)) continue;
      warnings.push(
        `${at(lineOf(lines, quoted(topic), s.line, s.line))}: "${topic}" is subscribed but the config has no handler for it: ` +
          'its deliveries are recorded, acknowledged and ignored (add a handler under `webhooks`, or remove the topic)',
      );
    }
    const uri = typeof s.uri === 'string' ? s.uri.trim() : undefined;
    // a path is relative to application_url; Pub/Sub and EventBridge addresses are not Mercato's to judge
    if (uri !== undefined && uri.startsWith('/') && uri.replace(/\/+$/, '') !== '/webhooks')
      warnings.push(
        `${at(lineOf(lines, /^\s*uri\s*=/, s.line, s.line))}: the subscription's uri "${uri}" is not Mercato's webhook endpoint: ` +
          'deliveries go to /webhooks (set uri = "/webhooks")',
      );
  }

  const compliance = new Set(subscriptions.flatMap((s) => s.complianceTopics));
  const missing = COMPLIANCE_TOPICS.filter((t) => !compliance.has(t));
  if (missing.length > 0) {
    const line = lineOf(lines, /^\s*compliance_topics\s*=/, 1, headers[0] ?? webhooksLine);
    warnings.push(
      `${at(line)}: the mandatory compliance topic${missing.length === 1 ? '' : 's'} ${missing.map((t) => `"${t}"`).join(', ')} ` +
        `${missing.length === 1 ? 'is' : 'are'} not subscribed (a [[webhooks.subscriptions]] with compliance_topics = [ "customers/data_request", ` +
        '"customers/redact", "shop/redact" ] and uri = "/webhooks"); the platform\'s app review requires them',
    );
  }

  const version = webhooks.api_version;
  if (typeof version === 'string' && version.trim() !== apiVersion)
    warnings.push(
      `${at(lineOf(lines, /^\s*api_version\s*=/, webhooksLine, webhooksLine))}: [webhooks] api_version is "${version.trim()}" but the app's Admin ` +
        `GraphQL client uses ${apiVersion}: payloads arrive in one version and queries answer in another ` +
        '(make them equal: the file, or `shopify.apiVersion` in the config)',
    );
  else if (version === undefined && subscriptions.length > 0)
    warnings.push(
      `${at(webhooksLine)}: [webhooks] has no api_version: the platform picks one for the deliveries (set it to ${apiVersion})`,
    );
  return warnings;
}
