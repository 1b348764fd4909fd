/**
 * A cron expression in English words ("Every 5 minutes", "At 09:00, Monday through Friday") for the API and the admin
 * UI. Covers the common forms (5 or 6 fields, `*`, `*\/n`, `a/n`, `a-b`, `a-b/n`, lists, month and weekday names,
 * the @nicknames); returns null for anything else (`L`, `W`, `#`), so callers show the expression itself.
 */

const NICKNAMES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

interface Unit {
  min: number;
  max: number;
  word: string;
  names?: readonly string[];
  fmt: (n: number) => string;
}
const pad = (n: number) => String(n).padStart(2, '0');
const SECOND: Unit = { min: 0, max: 59, word: 'second', fmt: String };
const MINUTE: Unit = { min: 0, max: 59, word: 'minute', fmt: String };
const HOUR: Unit = { min: 0, max: 23, word: 'hour', fmt: (n) => `${pad(n)}:00` };
const DAY: Unit = { min: 1, max: 31, word: 'day', fmt: String };
const MONTH: Unit = { min: 1, max: 12, word: 'month', names: MONTHS.map((m) => m.slice(0, 3)), fmt: (n) => MONTHS[n - 1]! };
const WEEKDAY: Unit = { min: 0, max: 7, word: 'weekday', names: DAYS.slice(0, 7).map((d) => d.slice(0, 3)), fmt: (n) => DAYS[n]! };

type Item = { from: number; to: number; step: number };
type Field = { any: true } | { any: false; items: Item[] };

function parseField(text: string, unit: Unit): Field | null {
  if (text === '*' || text === '?') return { any: true };
  const num = (s: string): number | null => {
    const i = unit.names?.findIndex((n) => n.toLowerCase() === s.toLowerCase()) ?? -1;
    if (i >= 0) return unit === MONTH ? i + 1 : i;
    if (!/^\d+$/.test(s)) return null;
    const n = Number(s);
    return n >= unit.min && n <= unit.max ? n : null;
  };
  const items: Item[] = [];
  for (const part of text.split(',')) {
    const m = /^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:\/(\d+))?$/i.exec(part);
    if (!m) return null;
    const step = m[3] === undefined ? 1 : Number(m[3]);
    const from = m[1] === '*' ? unit.min : num(m[1]!);
    const to = m[2] !== undefined ? num(m[2]) : m[1] === '*' || m[3] !== undefined ? unit.max : from;
    if (from === null || to === null || step < 1 || (m[1] === '*' && m[2] !== undefined)) return null;
    items.push({ from, to, step });
  }
  return { any: false, items };
}

const single = (f: Field): number | null => (!f.any && f.items.length === 1 && f.items[0]!.from === f.items[0]!.to ? f.items[0]!.from : null);
const singles = (f: Field): number[] | null => (!f.any && f.items.every((i) => i.from === i.to) ? f.items.map((i) => i.from) : null);
const everyNth = (f: Field, unit: Unit): number | null => {
  if (f.any || f.items.length !== 1) return null;
  const { from, to, step } = f.items[0]!;
  return step > 1 && from === unit.min && to === unit.max ? step : null;
};

function listWords(words: string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** The values of a field in words ("Monday through Friday", "1, 15 and 28"), or null for steps mixed into lists. */
function values(f: Field, unit: Unit): string | null {
  if (f.any) return null;
  if (f.items.length === 1 && f.items[0]!.step > 1) {
    const { from, to, step } = f.items[0]!;
    const span = to === unit.max ? `starting at ${unit.word} ${unit.fmt(from)}` : `from ${unit.fmt(from)} through ${unit.fmt(to)}`;
    return `every ${step} ${unit.word}s ${span}`;
  }
  if (f.items.some((i) => i.step > 1)) return null;
  return listWords(f.items.map((i) => (i.from === i.to ? unit.fmt(i.from) : `${unit.fmt(i.from)} through ${unit.fmt(i.to)}`)));
}

function periodic(f: Field, unit: Unit, plural: string): string | null {
  if (f.any) return `every ${unit.word}`;
  const n = everyNth(f, unit);
  if (n !== null) return `every ${n} ${unit.word}s`;
  const v = values(f, unit);
  if (v === null) return null;
  return v.startsWith('every ') ? v : `at ${singles(f)?.length === 1 ? unit.word : plural} ${v}`;
}

function timePhrases(sec: Field, min: Field, hour: Field): string[] | null {
  const s = single(sec);
  const m = single(min);
  const hours = singles(hour);
  if (s !== null && m !== null && hours && hours.length <= 6) {
    return [`at ${listWords(hours.map((h) => `${pad(h)}:${pad(m)}${s === 0 ? '' : `:${pad(s)}`}`))}`];
  }
  const out: string[] = [];
  if (s !== 0) {
    const p = periodic(sec, SECOND, 'seconds');
    if (p === null) return null;
    out.push(min.any && p.startsWith('at ') ? `${p} of every minute` : p);
  }
  if (m === 0 && s === 0 && (hour.any || everyNth(hour, HOUR) !== null)) return [hour.any ? 'every hour' : `every ${everyNth(hour, HOUR)} hours`];
  if (!(min.any && s !== 0)) {
    const p = periodic(min, MINUTE, 'minutes');
    if (p === null) return null;
    out.push(hour.any && p.startsWith('at ') ? `${p} of every hour` : p);
  }
  if (!hour.any) {
    const n = everyNth(hour, HOUR);
    const range = !hour.any && hour.items.length === 1 && hour.items[0]!.step === 1 ? hour.items[0]! : null;
    if (n !== null) out.push(`every ${n} hours`);
    else if (range) out.push(`from ${pad(range.from)}:00 through ${pad(range.to)}:59`);
    else {
      const stepped = values(hour, HOUR);
      if (stepped === null) return null;
      out.push(stepped.startsWith('every ') ? stepped : `during hours ${values(hour, { ...HOUR, fmt: pad })}`);
    }
  }
  return out;
}

function datePhrases(dom: Field, month: Field, dow: Field): string[] | null {
  const d = single(dom);
  const mo = single(month);
  if (d !== null && mo !== null && dow.any) return [`on ${MONTHS[mo - 1]} ${d}`];
  const out: string[] = [];
  const days: string[] = [];
  if (!dom.any) {
    const n = everyNth(dom, DAY);
    const v = values(dom, DAY);
    if (n === null && v === null) return null;
    days.push(n !== null ? `every ${n} days` : `on ${singles(dom)?.length === 1 ? 'day' : 'days'} ${v} of the month`);
  }
  if (!dow.any) {
    const v = values(dow, WEEKDAY);
    if (v === null || v.startsWith('every ')) return null;
    days.push(dow.items.length === 1 && dow.items[0]!.from !== dow.items[0]!.to ? v : `on ${v}`);
  }
  if (days.length > 0) out.push(days.join(' or ')); // croner fires when either the day of month or the weekday matches
  if (!month.any) {
    const n = everyNth(month, MONTH);
    const v = values(month, MONTH);
    if (n === null && v === null) return null;
    out.push(n !== null ? `every ${n} months` : `in ${v}`);
  }
  return out;
}

export function describeSchedule(expression: string): string | null {
  const trimmed = expression.trim();
  const parts = (NICKNAMES[trimmed.toLowerCase()] ?? trimmed).split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) return null;
  const [sec, min, hour, dom, month, dow] = parts.length === 6 ? parts : ['0', ...parts];
  const fields = [parseField(sec!, SECOND), parseField(min!, MINUTE), parseField(hour!, HOUR), parseField(dom!, DAY), parseField(month!, MONTH), parseField(dow!, WEEKDAY)];
  if (fields.some((f) => f === null)) return null;
  const [s, m, h, d, mo, w] = fields as Field[];
  const time = timePhrases(s!, m!, h!);
  const date = datePhrases(d!, mo!, w!);
  if (!time || !date) return null;
  const atTime = time.length === 1 && /^at \d\d:/.test(time[0]!);
  const phrases = atTime && date.length === 0 ? [`every day ${time[0]}`] : [...time, ...date];
  const text = phrases.join(', ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
