/**
 * The architecture's rules, checked on the source (docs/architecture.md, "Rules between folders"): no import cycle
 * between the top-level folders of src/ (type imports included), only the composition files know the Runtime, nothing
 * outside db/ touches the ORM handle, no router reaches the database, and SQL is written only in stores (and db/).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '../../src');
const IMPORT_RE = /(?:import|export)\s+(?:type\s+)?(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*\{[^}]*\})?)\s+from\s+['"](\.[^'"]+)['"]/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const files = sourceFiles(SRC).map((path) => ({ path, rel: relative(SRC, path).split(sep).join('/'), text: readFileSync(path, 'utf8') }));
const top = (rel: string) => rel.split('/')[0];

/** Every relative import of every file: the importing file and the imported one (both relative to src/). */
const imports = files.flatMap((f) =>
  [...f.text.matchAll(IMPORT_RE)].map((m) => ({
    from: f.rel,
    to: relative(SRC, normalize(join(dirname(f.path), m[1])))
      .split(sep)
      .join('/'),
  })),
);

/** Strongly connected components of a directed graph with more than one node (Tarjan). */
function cyclesOf(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((s) => [...s])]);
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v);
  return out;
}

describe('architecture rules', () => {
  it('the scan sees the source (a sanity check that it can fail)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(imports.length).toBeGreaterThan(500);
    // the cycle finder finds a planted cycle
    expect(
      cyclesOf(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set(['c'])],
          ['c', new Set(['a'])],
          ['d', new Set(['a'])],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
  });

  it('no import cycle between the top-level folders of src/ (type imports included)', () => {
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of imports) {
      const [a, b] = [top(from), top(to)];
      if (a === b) continue;
      if (!edges.has(a)) edges.set(a, new Set());
      edges.get(a)!.add(b);
    }
    const cycles = cyclesOf(edges);
    const explain = cycles.map(
      (c) =>
        `${c.join(' ↔ ')}: ${imports
          .filter((i) => c.includes(top(i.from)) && c.includes(top(i.to)) && top(i.from) !== top(i.to))
          .map((i) => `${i.from} → ${i.to}`)
          .join(', ')}`,
    );
    expect(explain).toEqual([]);
  });

  it('no import cycle between files either (type imports included): a shared piece lives below both', () => {
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of imports) {
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
    expect(cyclesOf(edges)).toEqual([]);
  });

  it('no module imports a router of another folder: what a router exports for others lives in a service', () => {
    const crossing = imports.filter((i) => /(^|\/|-)router\.ts$/.test(i.to) && dirname(i.from) !== dirname(i.to));
    // the composition (http/app.ts, which mounts every router) is the exception
    expect(crossing.filter((i) => !['http/app.ts', 'serve.ts', 'index.ts'].includes(i.from)).map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  it('only the composition files (serve.ts, cli/) and index.ts import runtime.ts', () => {
    const importers = [...new Set(imports.filter((i) => i.to === 'runtime.ts').map((i) => i.from))].sort();
    expect(importers.filter((f) => f !== 'serve.ts' && f !== 'index.ts' && !f.startsWith('cli/'))).toEqual([]);
    expect(importers).toContain('serve.ts');
  });

  it('nothing outside db/ touches the ORM handle', () => {
    const offenders = files
      .filter((f) => !f.rel.startsWith('db/') && /\.orm\b/.test(f.text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')))
      .map((f) => f.rel);
    expect(offenders).toEqual([]);
  });

  it('no router imports the database: routers call services built by their factories', () => {
    // a router is any file that builds a Hono app (named router.ts or not: webhooks.ts, admin/index.ts, mcp/endpoint.ts)
    const routers = files.filter((f) => /new Hono\b/.test(f.text));
    expect(routers.length).toBeGreaterThan(8);
    const offenders = imports
      .filter((i) => routers.some((r) => r.rel === i.from) && (i.to === 'db/engine.ts' || i.to === 'db/sql.ts'))
      .map((i) => `${i.from} → ${i.to}`);
    expect(offenders).toEqual([]);
  });

  it('SQL is written only in store modules, db/, the log query compiler and the table definitions', () => {
    const allowed = (rel: string) =>
      rel.startsWith('db/') || /(^|\/)store(\/|\.ts$)/.test(rel) || rel.endsWith('/schema.ts') || rel === 'logs/compile.ts';
    const writesSql = (text: string) => /\bsql`|\bsql\.raw\(/.test(text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, ''));
    const offenders = files.filter((f) => !allowed(f.rel) && writesSql(f.text)).map((f) => f.rel);
    expect(offenders).toEqual([]);
    expect(files.filter((f) => /(^|\/)store(\/|\.ts$)/.test(f.rel) && writesSql(f.text)).length).toBeGreaterThan(6);
  });
});
