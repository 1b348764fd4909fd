/** Start-up validation of `experimental.pages` (custom pages). One test per rule. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RESERVED_PAGE_SEGMENTS } from '../../src/app/validate/custom-pages.ts';
import { problemsAfter } from './validate-fixture.ts';

function rule(name: string, change: (config: any, base: any) => void, expected: string[]): void {
  it(name, () => {
    expect(problemsAfter(change)).toEqual(expected);
  });
}

const P = 'experimental.pages';
const S = `${P}.salesReport`;
const NAME_RULE = 'a letter, then letters, digits, _ or -; at most 64 characters';

describe('configuration validation: custom pages', () => {
  it('the fixture (two pages, loaders, actions, defaults) is valid; customPages true without pages is fine', () => {
    expect(problemsAfter(() => {})).toEqual([]);
    expect(problemsAfter((c) => delete c.experimental.pages)).toEqual([]);
    expect(problemsAfter((c) => (c.experimental.pages = {}))).toEqual([]);
  });
  rule(
    'pages must be an object',
    (c) => {
      c.experimental.pages = [];
    },
    [`${P}: must be an object mapping page keys to custom page definitions (defineCustomPage) (got an array)`],
  );
  rule(
    'pages need experimental.customPages: true',
    (c) => {
      delete c.experimental.customPages;
    },
    [`${P}: experimental.customPages must be true to define custom pages`],
  );
  rule(
    'pages need experimental.customPages: true (false is refused too)',
    (c) => {
      c.experimental.customPages = false;
    },
    [`${P}: experimental.customPages must be true to define custom pages`],
  );
  it('an empty pages object is allowed with customPages false', () => {
    expect(problemsAfter((c) => (c.experimental = { customPages: false, pages: {} }))).toEqual([]);
  });
  rule(
    'page keys: a letter, then letters, digits, _ or -',
    (c) => {
      c.experimental.pages['1st'] = { title: 'First', path: '/first' };
      c.experimental.pages['a/b'] = { title: 'AB', path: '/ab' };
      c.experimental.pages['x'.repeat(65)] = { title: 'Long', path: '/long' };
    },
    [
      `${P}["1st"]: "1st" is not a valid custom page key (${NAME_RULE})`,
      `${P}["a/b"]: "a/b" is not a valid custom page key (${NAME_RULE})`,
      `${P}.${'x'.repeat(65)}: "${'x'.repeat(65)}" is not a valid custom page key (${NAME_RULE})`,
    ],
  );
  rule(
    'a page must be an object',
    (c) => {
      c.experimental.pages.settings = () => null;
    },
    [`${P}.settings: must be a custom page definition object { title, path?, nav?, authorize?, loaders?, actions? } (got a function)`],
  );
  rule(
    'unknown page options are refused',
    (c) => {
      c.experimental.pages.salesReport.loader = {};
    },
    [`${S}.loader: unknown custom page option (did you mean "loaders"?); allowed: title, path, nav, authorize, loaders, actions`],
  );
  rule(
    'title is required and non-empty',
    (c) => {
      c.experimental.pages.settings.title = ' ';
    },
    [`${P}.settings.title: is required: a non-empty string (got " ")`],
  );
  rule(
    'path is an admin path',
    (c) => {
      c.experimental.pages.salesReport.path = 'reports/sales';
    },
    [
      `${S}.path: must be an admin path such as "/reports" or "/reports/daily" (segments of letters, digits, _ and -) (got "reports/sales")`,
    ],
  );
  rule(
    'path must not take a built-in page or a server route',
    (c) => {
      c.experimental.pages.salesReport.path = '/Flows/sales';
    },
    [`${S}.path: "/flows" is reserved for a built-in page or a server route (reserved: ${RESERVED_PAGE_SEGMENTS.join(', ')})`],
  );
  rule(
    'the default path (/<key>) must not be reserved either',
    (c) => {
      c.experimental.pages.runs = { title: 'My runs' };
    },
    [`${P}.runs: the default path "/runs" is reserved for a built-in page or a server route: set path`],
  );
  rule(
    'paths are unique (the default /<key> included)',
    (c) => {
      c.experimental.pages.other = { title: 'Other', path: '/settings' };
    },
    [`${P}.other.path: the path "/settings" is already used by custom page "settings"`],
  );
  rule(
    'nav must be a boolean',
    (c) => {
      c.experimental.pages.settings.nav = 'no';
    },
    [`${P}.settings.nav: must be a boolean (got "no")`],
  );
  rule(
    'authorize must be a function',
    (c) => {
      c.experimental.pages.salesReport.authorize = true;
    },
    [`${S}.authorize: must be a function (ctx) => boolean (got true)`],
  );
  rule(
    'loaders and actions must be objects',
    (c) => {
      c.experimental.pages.salesReport.loaders = [];
      c.experimental.pages.salesReport.actions = 'save';
    },
    [
      `${S}.loaders: must be an object mapping loader names to { input?, run } (got an array)`,
      `${S}.actions: must be an object mapping action names to { input?, run } (got "save")`,
    ],
  );
  rule(
    'loader and action names: a letter, then letters, digits, _ or -',
    (c) => {
      c.experimental.pages.salesReport.loaders['by day'] = { run: () => 1 };
      c.experimental.pages.salesReport.actions._save = { run: () => 1 };
    },
    [
      `${S}.loaders["by day"]: "by day" is not a valid loader name (${NAME_RULE})`,
      `${S}.actions._save: "_save" is not a valid action name (${NAME_RULE})`,
    ],
  );
  rule(
    'a loader must be an object',
    (c) => {
      c.experimental.pages.salesReport.loaders.summary = () => 1;
    },
    [`${S}.loaders.summary: must be a loader object { input?, run, description?, timeout? } (got a function)`],
  );
  rule(
    'run is required: a function',
    (c) => {
      delete c.experimental.pages.salesReport.loaders.summary.run;
      c.experimental.pages.salesReport.actions['export-csv'].run = 'go';
    },
    [
      `${S}.loaders.summary.run: is required: a function (ctx, input) (got undefined)`,
      `${S}.actions["export-csv"].run: is required: a function (ctx, input) (got "go")`,
    ],
  );
  rule(
    'input must be a schema',
    (c) => {
      c.experimental.pages.salesReport.loaders.summary.input = { days: 'number' };
    },
    [`${S}.loaders.summary.input: must be a schema (e.g. z.object({...})) (got an object)`],
  );
  rule(
    'unknown loader and action options are refused',
    (c) => {
      c.experimental.pages.salesReport.loaders.summary.schema = z.object({});
      c.experimental.pages.salesReport.actions['export-csv'].handler = () => 1;
    },
    [
      `${S}.loaders.summary.schema: unknown loader option; allowed: description, input, timeout, run`,
      `${S}.actions["export-csv"].handler: unknown action option; allowed: description, input, timeout, run`,
    ],
  );
  rule(
    'description must be a string',
    (c) => {
      c.experimental.pages.salesReport.loaders.summary.description = 1;
    },
    [`${S}.loaders.summary.description: must be a string (got 1)`],
  );
  rule(
    'timeout is positive and at most 30000 ms',
    (c) => {
      c.experimental.pages.salesReport.loaders.summary.timeout = 0;
      c.experimental.pages.salesReport.actions['export-csv'].timeout = 60_000;
    },
    [
      `${S}.loaders.summary.timeout: must be a positive number of ms, at most 30000 (got 0)`,
      `${S}.actions["export-csv"].timeout: must be a positive number of ms, at most 30000 (got 60000)`,
    ],
  );
  rule(
    'several problems are reported together',
    (c) => {
      c.experimental.customPages = false;
      c.experimental.pages.settings.title = undefined;
      c.experimental.pages.salesReport.loaders.summary.run = null;
    },
    [
      `${P}: experimental.customPages must be true to define custom pages`,
      `${S}.loaders.summary.run: is required: a function (ctx, input) (got null)`,
      `${P}.settings.title: is required: a non-empty string (got undefined)`,
    ],
  );
});
