/**
 * What the secrets-at-rest tests search: every row of every table of a database as text, and a finder that looks for
 * each secret in several encodings (as is, hex, base64 at the three byte alignments, URL-encoded).
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/db/engine.ts';

/** One searchable text and where it came from (`table runs`, `log line 12`, `response GET /api/runs 200`). */
export interface Haystack {
  where: string;
  text: string;
}

/** Every base table outside the system schemas, as listed by information_schema. */
export async function listTables(db: Database): Promise<Array<{ schema: string; name: string }>> {
  return db.query<{ schema: string; name: string }>(sql`
    select table_schema as schema, table_name as name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
    order by table_schema, table_name`);
}

/** Every row of every table, each row cast to text (`select t::text from <table> t`). */
export async function dumpDatabase(db: Database): Promise<{ tables: string[]; rows: Record<string, number>; haystacks: Haystack[] }> {
  const tables = await listTables(db);
  const haystacks: Haystack[] = [];
  const rows: Record<string, number> = {};
  for (const { schema, name } of tables) {
    const result = await db.query<{ row: string }>(sql`select t::text as row from ${sql.identifier(schema)}.${sql.identifier(name)} as t`);
    rows[name] = result.length;
    result.forEach((r, i) => haystacks.push({ where: `table ${schema}.${name} row ${i + 1}`, text: r.row }));
  }
  return { tables: tables.map((t) => `${t.schema}.${t.name}`), rows, haystacks };
}

/** The forms a secret is searched in. Base64 is tried at each byte alignment, without the characters the neighbours change. */
export function encodings(secret: string): Array<{ form: string; text: string }> {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [
    { form: 'plain', text: secret },
    { form: 'hex', text: bytes.toString('hex') },
    { form: 'HEX', text: bytes.toString('hex').toUpperCase() },
    { form: 'url-encoded', text: encodeURIComponent(secret) },
  ];
  for (let align = 0; align < 3; align++) {
    const encoded = Buffer.concat([Buffer.alloc(align), bytes]).toString('base64');
    forms.push({ form: `base64/${align}`, text: encoded.slice(align === 0 ? 0 : 4, -4) });
  }
  return forms.filter((f, i) => f.text.length >= 12 && forms.findIndex((g) => g.text === f.text) === i);
}

export interface Hit {
  secret: string;
  form: string;
  where: string;
}

/** Every place a secret (in any of its encodings) occurs. `secrets` maps a label to the value; hits name the label. */
export function findSecrets(haystacks: readonly Haystack[], secrets: Readonly<Record<string, string>>): Hit[] {
  const hits: Hit[] = [];
  for (const [label, value] of Object.entries(secrets)) {
    const forms = encodings(value);
    for (const h of haystacks) {
      for (const f of forms) if (h.text.includes(f.text)) hits.push({ secret: label, form: f.form, where: h.where });
    }
  }
  return hits;
}

/** A secret worth searching for: long enough and varied enough that a hit cannot be a coincidence. */
export function isNonTrivial(secret: string): boolean {
  return secret.length >= 16 && new Set(secret).size >= 8;
}
