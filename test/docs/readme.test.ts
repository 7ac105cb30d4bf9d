import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTING_SPECS } from '../../src/server/config/settings.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('shows the two-command quick start', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm test');
  });

  it.each(SETTING_SPECS.map((s) => [s.flag, s.env] as const))('documents --%s and its environment variable', (flag, env) => {
    expect(readme).toContain(`\`--${flag}\``);
    if (env) expect(readme).toContain(`\`${env}\``);
  });
});
