/** Start-up validation of cron entries. One test per rule. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isShopDomain } from '../../src/app/validate/crons.ts';
import { problemsAfter } from './validate-fixture.ts';

function rule(name: string, change: (config: any, base: any) => void, expected: string[]): void {
  it(name, () => {
    expect(problemsAfter(change)).toEqual(expected);
  });
}

const SHOP_HINT = '(the permanent shop domain "<name>.myshopify.com", lower case, without scheme or path)';

describe('configuration validation: crons', () => {
  rule(
    'crons must be an array',
    (c) => {
      c.crons = { nightly: c.crons[0] };
    },
    ['crons: must be an array of cron entries (got an object)'],
  );
  rule(
    'a cron entry must be an object',
    (c) => {
      c.crons[1] = '0 3 * * *';
    },
    ['crons[1]: must be a cron entry object (got "0 3 * * *")'],
  );
  rule(
    'flow must be a registered flow key',
    (c) => {
      c.crons[2].flow = 'syncOrderz';
    },
    ['crons[2].flow: "syncOrderz" is not a registered flow'],
  );
  rule(
    'flow is required',
    (c) => {
      delete c.crons[0].flow;
    },
    ['crons[0].flow: must be the key of a registered flow (got undefined)'],
  );
  rule(
    'flow must be an own key (not an inherited property)',
    (c) => {
      c.crons[0].flow = 'toString';
    },
    ['crons[0].flow: "toString" is not a registered flow'],
  );
  rule(
    'schedule is required',
    (c) => {
      delete c.crons[0].schedule;
    },
    ['crons[0].schedule: must be a cron expression string (got undefined)'],
  );
  rule(
    'schedule must be a valid cron expression',
    (c) => {
      c.crons[0].schedule = '61 * * * *';
    },
    ['crons[0].schedule: "61 * * * *" is not a valid cron expression: Invalid value for minute: 61'],
  );
  rule(
    'schedule must have 5 or 6 fields',
    (c) => {
      c.crons[0].schedule = '0 0 3 * * * 2030';
    },
    [
      `crons[0].schedule: "0 0 3 * * * 2030" is not a valid cron expression: mode '5-or-6-parts' requires exactly 5 or 6 parts, but pattern '0 0 3 * * * 2030' has 7 parts.`,
    ],
  );
  rule(
    'schedule must fire at least once',
    (c) => {
      c.crons[0].schedule = '0 0 30 2 *';
    },
    ['crons[0].schedule: "0 0 30 2 *" never fires (no date matches it)'],
  );
  rule(
    'input is validated with the flow input schema (issue paths reported)',
    (c) => {
      c.crons[0].input = { since: 3, limit: 1.5 };
      c.crons[1].input = { channel: 'fax' };
    },
    [
      'crons[0].input.since: Invalid input: expected string, received number',
      'crons[0].input.limit: Invalid input: expected int, received number',
      'crons[1].input.channel: Invalid option: expected one of "email"|"slack"',
    ],
  );
  rule(
    'an omitted input means {} and must satisfy the flow schema',
    (c) => {
      delete c.crons[1].input;
    },
    ['crons[1].input: omitted, so {} is used, which flow "sendDigest" rejects: channel: Invalid option: expected one of "email"|"slack"'],
  );
  rule(
    'a schema that throws is reported',
    (c) => {
      c.flows.sendDigest.input = z.object({}).transform(() => {
        throw new Error('boom');
      });
    },
    [
      'crons[1].input: the input schema of flow "sendDigest" threw: boom',
      'crons[4].input: the input schema of flow "sendDigest" threw: boom',
    ],
  );
  it('an async schema is left to run time (no problem)', () => {
    expect(
      problemsAfter((c) => {
        c.flows.sendDigest.input = z.object({ channel: z.string() }).refine(async () => true);
      }),
    ).toEqual([]);
  });
  rule(
    "shops accepts 'global', 'all', a domain or a list, and rejects other strings",
    (c) => {
      c.crons[0].shops = 'everyone';
    },
    [`crons[0].shops: must be 'global', 'all', a shop domain or an array of shop domains; "everyone" is not a shop domain ${SHOP_HINT}`],
  );
  rule(
    'shops must not be another type',
    (c) => {
      c.crons[0].shops = 3;
    },
    ["crons[0].shops: must be 'global', 'all', a shop domain or an array of shop domains (got 3)"],
  );
  rule(
    'shops array must not be empty',
    (c) => {
      c.crons[3].shops = [];
    },
    ["crons[3].shops: must not be an empty array (use 'global' or 'all', or list shop domains)"],
  );
  rule(
    'shops array entries must be shop domains',
    (c) => {
      c.crons[3].shops = ['https://a.myshopify.com', 'Shop.myshopify.com', 'all', 7];
    },
    [
      `crons[3].shops[0]: "https://a.myshopify.com" is not a shop domain ${SHOP_HINT}`,
      `crons[3].shops[1]: "Shop.myshopify.com" is not a shop domain ${SHOP_HINT}`,
      `crons[3].shops[2]: "all" is not a shop domain ${SHOP_HINT}`,
      `crons[3].shops[3]: 7 is not a shop domain ${SHOP_HINT}`,
    ],
  );
  rule(
    'shops array entries must be unique',
    (c) => {
      c.crons[3].shops = ['a.myshopify.com', 'a.myshopify.com'];
    },
    ['crons[3].shops[1]: duplicate shop "a.myshopify.com" (also at crons[3].shops[0])'],
  );
  rule(
    'name must be a string',
    (c) => {
      c.crons[0].name = 5;
    },
    ['crons[0].name: must be a string (got 5)'],
  );
  rule(
    'unknown entry fields are rejected (a typo would silently change the shop mode)',
    (c) => {
      c.crons[2].shop = c.crons[2].shops;
      delete c.crons[2].shops;
    },
    ['crons[2].shop: unknown cron entry field (did you mean "shops"?); allowed: name, schedule, flow, input, shops, timezone'],
  );
  rule(
    'timezone must be a valid IANA zone',
    (c) => {
      c.crons[1].timezone = 'Mars/Olympus';
    },
    ['crons[1].timezone: must be an IANA time zone such as "Europe/Paris" or "UTC" (got "Mars/Olympus")'],
  );
  rule(
    'two entries with the same key (flow:schedule) are rejected',
    (c) => {
      c.crons.push({ schedule: '0 3 * * *', flow: 'syncOrders', shops: 'global' });
    },
    ['crons[5]: duplicate cron key "syncOrders:0 3 * * *" (also used by crons[0]); give one entry another schedule or merge their shops'],
  );

  it('shop domain format', () => {
    for (const ok of ['demo.myshopify.com', 'my-shop-1.myshopify.com', '1shop.myshopify.com']) expect(isShopDomain(ok), ok).toBe(true);
    for (const bad of [
      'shop.example.co.uk',
      'a.b',
      'x.y.myshopify.com',
      'localhost',
      'Demo.myshopify.com',
      'demo.myshopify.com/',
      'demo.myshopify.com:443',
      '-a.myshopify.com',
      'a..com',
      'a.com.',
      '',
      'a_b.com',
    ]) {
      expect(isShopDomain(bad), bad).toBe(false);
    }
  });
});
