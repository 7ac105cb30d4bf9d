import { describe, expect, it } from 'vitest';
import { CommandError, createExecRunner } from '../../../src/agent/dataplane/index.js';

describe('createExecRunner', () => {
  it('runs without a shell and passes stdin', async () => {
    const runner = createExecRunner();
    expect((await runner.run('printf', ['%s|', 'a b', '$(echo no)'])).stdout).toBe('a b|$(echo no)|');
    expect((await runner.run('cat', [], { input: 'secret\n' })).stdout).toBe('secret\n');
  });

  it('prepends the prefix (as for `ip netns exec NS`)', async () => {
    const runner = createExecRunner({ prefix: ['env', 'FP_PREFIX_TEST=yes'] });
    expect((await runner.run('printenv', ['FP_PREFIX_TEST'])).stdout).toBe('yes\n');
    expect((await runner.run('printenv', ['FP_ENV_TEST'], { env: { FP_ENV_TEST: 'set' } })).stdout).toBe('set\n');
  });

  it('fails with CommandError carrying exit code and stderr, but never stdin', async () => {
    const runner = createExecRunner();
    const error = await runner.run('sh', ['-c', 'cat >/dev/null; echo oops >&2; exit 3'], { input: 'private' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect(error).toMatchObject({ command: 'sh', exitCode: 3, stderr: 'oops\n' });
    expect(String(error)).not.toContain('private');
    const missing = await runner.run('fleetplane-no-such-binary', []).catch((e: unknown) => e);
    expect(missing).toMatchObject({ name: 'CommandError', exitCode: null });
  });

  it('kills a command on abort or timeout', async () => {
    const controller = new AbortController();
    const pending = createExecRunner().run('sleep', ['30'], { signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(CommandError);
    await expect(createExecRunner({ timeoutMs: 50 }).run('sleep', ['30'])).rejects.toBeInstanceOf(CommandError);
  });
});
