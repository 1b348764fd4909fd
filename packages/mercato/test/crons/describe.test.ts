/** The schedule in words, and fire times in a time zone (no database). */
import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../src/crons/describe.ts';
import { cronSpec, scheduleOf, targetsShop } from '../../src/crons/schedule.ts';

describe('describeSchedule', () => {
  // cronstrue's wording, with 24-hour times
  it.each([
    ['* * * * *', 'Every minute'],
    ['*/5 * * * *', 'Every 5 minutes'],
    ['*/15 * * * *', 'Every 15 minutes'],
    ['0 * * * *', 'Every hour'],
    ['@hourly', 'Every hour'],
    ['30 * * * *', 'At 30 minutes past the hour'],
    ['0,30 * * * *', 'At 0 and 30 minutes past the hour'],
    ['0 */2 * * *', 'On the hour, every 2 hours'],
    ['15 */2 * * *', 'At 15 minutes past the hour, every 2 hours'],
    ['30 3 * * *', 'At 03:30'],
    ['  0 3 * * *  ', 'At 03:00'],
    ['@daily', 'At 00:00'],
    ['@DAILY', 'At 00:00'],
    ['@weekly', 'At 00:00, only on Sunday'],
    ['0 8,20 * * *', 'At 08:00 and 20:00'],
    ['0 9 * * 1-5', 'At 09:00, Monday through Friday'],
    ['0 9 * * mon-fri', 'At 09:00, Monday through Friday'],
    ['0 0 * * 1,3,5', 'At 00:00, only on Monday, Wednesday, and Friday'],
    ['0 0 * * 7', 'At 00:00, only on Sunday'],
    ['0 0 1 * *', 'At 00:00, on day 1 of the month'],
    ['0 0 1,15 * *', 'At 00:00, on day 1 and 15 of the month'],
    ['0 0 1 1 *', 'At 00:00, on day 1 of the month, only in January'],
    ['0 0 * JAN,JUL *', 'At 00:00, only in January and July'],
    ['0 0 1 * 1', 'At 00:00, on day 1 of the month, and on Monday'],
    ['*/10 9-17 * * *', 'Every 10 minutes, between 09:00 and 17:59'],
    ['5/15 * * * *', 'Every 15 minutes, starting at 5 minutes past the hour'],
    ['*/30 * * * * *', 'Every 30 seconds'],
    ['* * * * * *', 'Every second'],
    ['10 * * * * *', 'At 10 seconds past the minute'],
    ['0 30 9 * * *', 'At 09:30'],
    // forms croner also schedules
    ['0 0 L * *', 'At 00:00, on the last day of the month'],
    ['0 0 * * 5#2', 'At 00:00, on the second Friday of the month'],
  ])('%s → %s', (expression, words) => {
    expect(describeSchedule(expression)).toBe(words);
  });

  it.each([
    'nonsense',
    '',
    '* * *',
    '61 * * * *',
    '0 24 * * *',
    '0 0 32 * *',
    '0 0 * 13 *',
    '0 0 * * 8',
    '* * * * * * *',
    '@reboot',
    '@every_minute',
  ])('%j → null (shown as the expression)', (expression) => {
    expect(describeSchedule(expression)).toBeNull();
  });
});

describe('schedules', () => {
  it('reads the expression in the entry time zone, default UTC', () => {
    const utc = scheduleOf(cronSpec({ schedule: '0 8 * * *', flow: 'f' }));
    const paris = scheduleOf(cronSpec({ schedule: '0 8 * * *', flow: 'f', timezone: 'Europe/Paris' }));
    const winter = new Date('2030-01-15T12:00:00Z');
    const summer = new Date('2030-07-15T12:00:00Z');
    expect(utc.nextAfter(winter)?.toISOString()).toBe('2030-01-16T08:00:00.000Z');
    expect(paris.nextAfter(winter)?.toISOString()).toBe('2030-01-16T07:00:00.000Z');
    expect(paris.nextAfter(summer)?.toISOString()).toBe('2030-07-16T06:00:00.000Z');
  });

  it('latestAtOrBefore includes the instant itself and nextAfter excludes it', () => {
    const every5 = scheduleOf(cronSpec({ schedule: '*/5 * * * *', flow: 'f' }));
    const at = new Date('2030-01-01T10:05:00.000Z');
    expect(every5.latestAtOrBefore(at)?.toISOString()).toBe('2030-01-01T10:05:00.000Z');
    expect(every5.latestAtOrBefore(new Date(at.getTime() - 1))?.toISOString()).toBe('2030-01-01T10:00:00.000Z');
    expect(every5.nextAfter(at)?.toISOString()).toBe('2030-01-01T10:10:00.000Z');
  });

  it('derives the key, display name and defaults of an entry', () => {
    expect(cronSpec({ schedule: '0 3 * * *', flow: 'sync' })).toEqual({
      key: 'sync:0 3 * * *',
      name: 'sync',
      flow: 'sync',
      schedule: '0 3 * * *',
      timezone: 'UTC',
      shops: 'global',
      input: {},
    });
    expect(cronSpec({ name: 'Nightly', schedule: '0 3 * * *', flow: 'sync', shops: 'all', input: { a: 1 } })).toMatchObject({
      name: 'Nightly',
      shops: 'all',
      input: { a: 1 },
    });
  });

  it('targets shops by mode', () => {
    expect(targetsShop('global', 'a.myshopify.com')).toBe(false);
    expect(targetsShop('all', 'a.myshopify.com')).toBe(true);
    expect(targetsShop('a.myshopify.com', 'a.myshopify.com')).toBe(true);
    expect(targetsShop('b.myshopify.com', 'a.myshopify.com')).toBe(false);
    expect(targetsShop(['b.myshopify.com', 'a.myshopify.com'], 'a.myshopify.com')).toBe(true);
    expect(targetsShop(['b.myshopify.com'], 'a.myshopify.com')).toBe(false);
  });
});
