import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CostBucket, type Schema, execute, extendSchema, parseArgs, parseDocument, prepare, createAdminSchema } from '../src/index.ts';

const schema: Schema = extendSchema(createAdminSchema(), {
  types: {
    QueryRoot: {
      kind: 'object',
      fields: {
        items: {
          type: '[Item!]!',
          args: { first: 'Int!' },
          resolve: (_r, args) => Array.from({ length: Math.min(args.first, 2) }, (_, i) => ({ id: `i${i}` })),
        },
        broken: { type: 'String', resolve: () => Promise.reject(new Error('boom')) },
      },
    },
    Item: { kind: 'object', fields: { id: { type: 'ID!' } } },
    Mutation: { kind: 'object', fields: { touch: { type: 'Item', args: { id: 'ID!' }, resolve: (_r, args) => ({ id: args.id }) } } },
  },
  mutation: 'Mutation',
});
const shop = { domain: 'a.myshopify.com', name: 'A', email: 'x', currencyCode: 'USD', id: 1, gid: 'gid://shopify/Shop/1' };
const ctx = { shop } as any;

describe('GraphQL parser and evaluator', () => {
  it('parses strings, block strings, lists, objects, comments and reports positions', () => {
    const doc = parseDocument('# c\nquery Q($a: [Int!] = [1, 2]) { x(s: "a\\u0041", b: """\n  hi\n""", o: { k: [true, null, ENUM] }) }');
    expect(doc.operations[0]!.name).toBe('Q');
    expect(doc.operations[0]!.variables[0]).toMatchObject({ name: 'a', type: '[Int!]' });
    const field = doc.operations[0]!.selections[0] as any;
    expect(field.args.s).toEqual({ kind: 'string', value: 'aA' });
    expect(field.args.b).toEqual({ kind: 'string', value: 'hi' });
    expect(() => parseDocument('{ x ')).toThrow(/Expected "}"/);
    expect(() => parseDocument('{ x(a: ) }')).toThrowError(expect.objectContaining({ loc: { line: 1, column: 8 } }));
  });

  it('computes requested and actual cost (objects 1, connections 2 + first × children, mutations 10)', async () => {
    const p = prepare(schema, '{ shop { name } items(first: 5) { id } }');
    if (!p.ok) throw new Error('invalid');
    expect(p.requestedCost).toBe(1 + 2 + 5 * 0);
    const r = await execute(schema, p, ctx);
    expect(r.data).toEqual({ shop: { name: 'A' }, items: [{ id: 'i0' }, { id: 'i1' }] });
    const m = prepare(schema, 'mutation { touch(id: "7") { id } }');
    expect(m.ok && m.requestedCost).toBe(10);
  });

  it('refuses unknown arguments, missing required arguments and undeclared variables', () => {
    const bad = prepare(schema, 'query { items { id } shop(x: 1) { name } other: items(first: $n) { id } }');
    expect(bad.ok).toBe(false);
    const messages = !bad.ok ? bad.errors.map((e) => e.message) : [];
    expect(messages).toEqual(
      expect.arrayContaining([
        "Field 'items' is missing required arguments: first",
        "Field 'shop' doesn't accept argument 'x'",
        'Variable $n is used by anonymous query but not declared',
      ]),
    );
    const missingVar = prepare(schema, 'query ($id: ID!) { touch: items(first: 1) { id } }');
    expect(!missingVar.ok && missingVar.errors[0]!.message).toMatch(/\$id of type ID! was provided invalid value/);
    expect(prepare(schema, 'query A { shop { name } } query B { shop { id } }').ok).toBe(false);
    expect(prepare(schema, 'query A { shop { name } } query B { shop { id } }', {}, 'B').ok).toBe(true);
  });

  it('resolver errors null the field and carry the path', async () => {
    const p = prepare(schema, '{ broken shop { name } }');
    if (!p.ok) throw new Error('invalid');
    const r = await execute(schema, p, ctx);
    expect(r.data).toEqual({ broken: null, shop: { name: 'A' } });
    expect(r.errors).toEqual([expect.objectContaining({ message: 'boom', path: ['broken'] })]);
  });

  it('the bucket refills continuously and never above its capacity', () => {
    let now = 0;
    const bucket = new CostBucket({ max: 10, restoreRate: 2 }, () => now);
    expect(bucket.take(10)).toBe(true);
    expect(bucket.take(1)).toBe(false);
    now = 1500;
    expect(bucket.status().currentlyAvailable).toBe(3);
    now = 60_000;
    expect(bucket.status().currentlyAvailable).toBe(10);
  });
});

describe('CLI', () => {
  it('parses options with documented defaults', () => {
    expect(parseArgs([])).toMatchObject({
      port: 4000,
      hostname: '127.0.0.1',
      apps: [{ apiKey: 'mercato-dev-api-key', apiSecret: 'mercato-dev-api-secret', appUrl: 'http://localhost:3000' }],
      shops: ['demo-1.myshopify.com', 'demo-2.myshopify.com'],
    });
    expect(
      parseArgs(['--port=0', '--app', 'k,s,http://x:1', '--shop', 'z.myshopify.com', '--bucket-max', '5', '--restore-rate', '1']),
    ).toMatchObject({
      port: 0,
      apps: [{ apiKey: 'k', apiSecret: 's', appUrl: 'http://x:1' }],
      shops: ['z.myshopify.com'],
      bucket: { max: 5, restoreRate: 1 },
    });
    expect(() => parseArgs(['--port', 'x'])).toThrow(/--port/);
    expect(() => parseArgs(['--app', 'only-key'])).toThrow(/KEY,SECRET/);
    expect(() => parseArgs(['--nope'])).toThrow(/unknown option/);
  });

  it('platform-sim --port 0 serves and stops on SIGTERM', async () => {
    const bin = resolve(dirname(fileURLToPath(import.meta.url)), '../bin/platform-sim.js');
    const child = spawn(process.execPath, [bin, '--port', '0', '--shop', 'cli.myshopify.com'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const url = await new Promise<string>((res, rej) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) res(m[1]!);
      });
      child.on('exit', (code) => rej(new Error(`exited ${code}: ${out}`)));
    });
    const state = (await (await fetch(`${url}/__sim/state`)).json()) as any;
    expect(state.shops.map((s: any) => s.domain)).toEqual(['cli.myshopify.com']);
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
