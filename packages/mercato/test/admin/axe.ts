/**
 * axe-core in the real page: its source (the axe-core package's axe.min.js) is evaluated in the page through the
 * browser's debugging protocol — not a <script> tag, which the UI's Content-Security-Policy would refuse — and
 * `axe.run` checks the document as it is at that moment (open dialogs included).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export type Impact = 'minor' | 'moderate' | 'serious' | 'critical';

export interface Violation {
  /** The axe rule, e.g. `color-contrast`. */
  id: string;
  impact: Impact | null;
  help: string;
  /** The CSS selectors of the failing elements, with axe's summary of what is wrong with each. */
  nodes: { target: string; html: string; summary: string }[];
}

/** Every violation axe finds in the page (all its rules but the experimental ones), most serious first. */
export async function axeViolations(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: any[] }> } }).axe;
    const results = await axe.run(document, { resultTypes: ['violations'] });
    return results.violations.map((v) => ({
      id: v.id as string,
      impact: v.impact as Impact | null,
      help: v.help as string,
      nodes: (v.nodes as any[]).map((n) => ({
        target: (n.target as unknown[]).map(String).join(' '),
        html: String(n.html).slice(0, 200),
        summary: String(n.failureSummary ?? ''),
      })),
    }));
  });
  const rank: Record<string, number> = { critical: 0, serious: 1, moderate: 2, minor: 3 };
  return violations.sort((a, b) => (rank[a.impact ?? 'minor'] ?? 4) - (rank[b.impact ?? 'minor'] ?? 4));
}

/** The serious and critical ones, as one readable line each (what the tests assert is empty). */
export function blocking(violations: Violation[]): string[] {
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => `${n.target} ${n.html}`).join(' | ')}`);
}
