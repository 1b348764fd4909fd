/** The schedule in words, and fire times in a time zone (no database). */
import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../src/crons/describe.ts';
import { cronSpec, scheduleOf, targetsShop } from '../../src/crons/schedule.ts';

describe('describeSchedule', () => {
  it.each([
    ['* * * * *', 'Every minute'],
    ['*/5 * * * *', 'Every 5 minutes'],
    ['0 * * * *', 'Every hour'],
    ['@hourly', 'Every hour'],
    ['30 * * * *', 'At minute 30 of every hour'],
    ['0,30 * * * *', 'At minutes 0 and 30 of every hour'],
    ['0 */2 * * *', 'Every 2 hours'],
    ['15 */2 * * *', 'At minute 15, every 2 hours'],
    ['30 3 * * *', 'Every day at 03:30'],
    ['@daily', 'Every day at 00:00'],
    ['0 8,20 * * *', 'Every day at 08:00 and 20:00'],
    ['0 9 * * 1-5', 'At 09:00, Monday through Friday'],
    ['0 9 * * mon-fri', 'At 09:00, Monday through Friday'],
    ['0 0 * * 1,3,5', 'At 00:00, on Monday, Wednesday and Friday'],
    ['0 0 * * 7', 'At 00:00, on Sunday'],
    ['0 0 1 * *', 'At 00:00, on day 1 of the month'],
    ['0 0 1,15 * *', 'At 00:00, on days 1 and 15 of the month'],
    ['0 0 1 1 *', 'At 00:00, on January 1'],
    ['0 0 * JAN,JUL *', 'At 00:00, in January and July'],
    ['0 0 1 * 1', 'At 00:00, on day 1 of the month or on Monday'],
    ['*/10 9-17 * * *', 'Every 10 minutes, from 09:00 through 17:59'],
    ['5/15 * * * *', 'Every 15 minutes starting at minute 5'],
    ['*/30 * * * * *', 'Every 30 seconds'],
    ['* * * * * *', 'Every second'],
    ['10 * * * * *', 'At second 10 of every minute'],
    ['0 30 9 * * *', 'Every day at 09:30'],
  ])('%s → %s', (expression, words) => {
    expect(describeSchedule(expression)).toBe(words);
  });

  it.each(['0 0 L * *', '0 0 * * 5#2', '0 0 15W * *', 'nonsense', '* * *', '61 * * * *'])('%s → null (shown as the expression)', (expression) => {
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
    expect(cronSpec({ schedule: '0 3 * * *', flow: 'sync' })).toEqual({ key: 'sync:0 3 * * *', name: 'sync', flow: 'sync', schedule: '0 3 * * *', timezone: 'UTC', shops: 'global', input: {} });
    expect(cronSpec({ name: 'Nightly', schedule: '0 3 * * *', flow: 'sync', shops: 'all', input: { a: 1 } })).toMatchObject({ name: 'Nightly', shops: 'all', input: { a: 1 } });
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
