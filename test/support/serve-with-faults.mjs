// Test-only: `fleetplane serve` with faults the product has no setting for.
//
//   FLEETPLANE_TEST_BUS_DROP_EVERY=3 node test/support/serve-with-faults.mjs serve [settings]
//
// discards every 3rd incoming bus signal, to prove that a lost signal is repaired. The variable is read
// here, by this script, never by the product; cluster workers run this script too, and inherit it.
import { runServe } from '../../dist/cli/serve.js';

const argv = process.argv.slice(2);
if (argv[0] !== 'serve') {
  process.stderr.write('usage: serve-with-faults.mjs serve [settings]\n');
  process.exit(2);
}
const dropEvery = Number(process.env.FLEETPLANE_TEST_BUS_DROP_EVERY ?? '0');
const hooks = dropEvery > 0 ? { bus: { dropEvery: { incoming: dropEvery } } } : {};
runServe(argv.slice(1), hooks).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`serve-with-faults: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
