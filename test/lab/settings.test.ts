import { describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { DEFAULT_SETTINGS, parseFaults, validateSettings } from '../../src/lab/settings.ts';

/** Bad lab settings are configuration errors like any other, naming the field as its CLI flag. */
describe('lab settings validation', () => {
  it('a bad value is a config error naming its flag', () => {
    const bad = () => validateSettings({ ...DEFAULT_SETTINGS, tasks: 0 });
    expect(bad).toThrow(TaskplaneError);
    expect(bad).toThrow(expect.objectContaining({ code: 'config', field: 'tasks' }));
    expect(bad).toThrow('tasks: must be an integer in 1..100000');
    expect(() => parseFaults('flaps,meteor')).toThrow(
      expect.objectContaining({ code: 'config', field: 'faults' }),
    );
  });

  it('good settings pass through unchanged', () => {
    expect(validateSettings({ ...DEFAULT_SETTINGS })).toEqual(DEFAULT_SETTINGS);
  });
});
