/**
 * Secret comparisons are constant-time: the comparison helper (http/auth.ts constantTimeEqual), and a scan of every
 * source file of src/ that fails when a value named like a secret, token, HMAC, signature, digest, hash or password is
 * compared with `===`/`!==`/`==`/`!=`, `.equals()` or `Buffer.compare()` — the comparisons that stop at the first
 * differing byte. A comparison that is not about a secret value goes in ALLOWED with the reason.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { constantTimeEqual } from '../../src/http/auth.ts';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/** Names that say "secret value". */
const SECRET_NAME = /(secret|hmac|signature|digest|password|passwd|token|hash)/i;
/** …unless the name says it is something about the secret, not the secret itself (`tokenId`, `secretLength`, `hashKeyId`). */
const NOT_A_VALUE = /(id|ids|count|length|size|name|names|kind|type|status|channel|header|prefix|at|ms|index|version|scheme|fields?)$/i;

/** Comparisons that name a secret but are not about a secret value: `file: text` → reason. */
const ALLOWED: Record<string, string> = {
  'db/migrate.ts: previous !== migration.hash':
    "a migration file's checksum against the one recorded when it was applied: public, not a credential",
};

/** The names an expression is known by: the identifier, the last property, the called function and its arguments. */
function namesOf(node: ts.Expression): string[] {
  if (ts.isIdentifier(node)) return [node.text];
  if (ts.isPropertyAccessExpression(node)) return [node.name.text];
  if (ts.isElementAccessExpression(node)) return namesOf(node.expression);
  if (ts.isCallExpression(node)) return [...namesOf(node.expression), ...node.arguments.flatMap(namesOf)];
  if (ts.isParenthesizedExpression(node) || ts.isAwaitExpression(node) || ts.isNonNullExpression(node) || ts.isAsExpression(node))
    return namesOf(node.expression);
  return [];
}

const secretNamed = (node: ts.Expression) => namesOf(node).some((name) => SECRET_NAME.test(name) && !NOT_A_VALUE.test(name));

/** Literals and `typeof x`: comparing a secret with one of these checks its shape (empty, missing, a string), not its value. */
function isShapeOperand(node: ts.Expression): boolean {
  const n = ts.isParenthesizedExpression(node) ? node.expression : node;
  return (
    ts.isLiteralExpression(n) ||
    ts.isNoSubstitutionTemplateLiteral(n) ||
    ts.isTypeOfExpression(n) ||
    n.kind === ts.SyntaxKind.NullKeyword ||
    n.kind === ts.SyntaxKind.TrueKeyword ||
    n.kind === ts.SyntaxKind.FalseKeyword ||
    (ts.isIdentifier(n) && n.text === 'undefined')
  );
}

const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

/** The early-exit comparisons of secret-named values in one source text. */
export function secretComparisons(fileName: string, source: string): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isBinaryExpression(node) && EQUALITY.has(node.operatorToken.kind)) {
      const { left, right } = node;
      if (!isShapeOperand(left) && !isShapeOperand(right) && (secretNamed(left) || secretNamed(right))) found.push(node.getText(file));
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const operands = [...node.arguments];
      if (ts.isPropertyAccessExpression(callee)) {
        const method = callee.name.text;
        const isBufferCompare = method === 'compare' && ts.isIdentifier(callee.expression) && callee.expression.text === 'Buffer';
        if (method === 'equals' || method === 'localeCompare') operands.push(callee.expression);
        if ((method === 'equals' || method === 'localeCompare' || isBufferCompare) && operands.some(secretNamed))
          found.push(node.getText(file));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('constantTimeEqual', () => {
  it('is true for equal values, strings or bytes', () => {
    expect(constantTimeEqual('mcp_secret_value', 'mcp_secret_value')).toBe(true);
    expect(constantTimeEqual(Buffer.from('abc'), Buffer.from('abc'))).toBe(true);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('é', Buffer.from('é', 'utf8'))).toBe(true);
  });

  it('is false for different values of the same length, wherever they differ', () => {
    const value = 'a'.repeat(64);
    for (const at of [0, 31, 63]) expect(constantTimeEqual(value, `${value.slice(0, at)}b${value.slice(at + 1)}`), `at ${at}`).toBe(false);
    expect(constantTimeEqual(Buffer.from([1, 2, 3]), Buffer.from([1, 2, 4]))).toBe(false);
  });

  it('is false (and does not throw) for different lengths, a prefix and the empty value included', () => {
    expect(constantTimeEqual('secret', 'secret!')).toBe(false);
    expect(constantTimeEqual('secret!', 'secret')).toBe(false);
    expect(constantTimeEqual('', 'x')).toBe(false);
    expect(constantTimeEqual(Buffer.alloc(32), Buffer.alloc(31))).toBe(false);
  });
});

describe('secret comparisons in src/', () => {
  it('the scan finds the comparisons it is meant to catch, and only those', () => {
    const caught = secretComparisons(
      'sample.ts',
      `
      if (given === expectedHmac) ok();
      if (header.signature !== computeSignature(body)) fail();
      if (row.secretHash == hash) ok();
      if (await sign(x) === token) ok();
      if (Buffer.from(secret).equals(other)) ok();
      if (Buffer.compare(digest, given) === 0) ok();
      `,
    );
    expect(caught).toEqual([
      'given === expectedHmac',
      'header.signature !== computeSignature(body)',
      'row.secretHash == hash',
      'await sign(x) === token',
      'Buffer.from(secret).equals(other)',
      'Buffer.compare(digest, given)',
    ]);
    expect(
      secretComparisons(
        'sample.ts',
        `
        if (token === undefined || token === '' || typeof secret !== 'string' || hash === null) return;
        if (tokenId === other.tokenId || tokens.length !== 2 || row.hashKeyId !== current) return;
        if (parts[2].length !== SIGNATURE_LENGTH || token.status === 'revoked') return;
        if (constantTimeEqual(secret, given)) ok();
        `,
      ),
    ).toEqual([]);
  });

  it('no file compares a secret with an early-exit comparison', () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(50);
    const offending: string[] = [];
    for (const file of files) {
      const rel = relative(SRC, file);
      for (const text of secretComparisons(rel, readFileSync(file, 'utf8'))) {
        if (!(`${rel}: ${text}` in ALLOWED)) offending.push(`${rel}: ${text}`);
      }
    }
    expect(
      offending,
      'compare secrets with constantTimeEqual (src/http/auth.ts), or add the comparison to ALLOWED with the reason',
    ).toEqual([]);
  });

  it('every timingSafeEqual call is behind constantTimeEqual or an equal-length check', () => {
    const unguarded: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const lines = readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (!/timingSafeEqual\(/.test(line) || /^\s*(\/\/|\*|import)/.test(line)) return;
        const guarded = /\.length === \w+\.length && timingSafeEqual\(/.test(line) || /timingSafeEqual\(digestA, digestB\)/.test(line);
        if (!guarded) unguarded.push(`${relative(SRC, file)}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(unguarded, 'timingSafeEqual throws on different lengths: compare with constantTimeEqual').toEqual([]);
  });
});
