import type { JSX } from 'preact';
import { useConvergence } from '../live/hooks.js';
import { href } from '../router.js';
import { RecentActivity } from './recent-activity.js';

/** The fleet at a glance: how many devices are at the head, behind, failing or stale, a bar that fills as they ACK, the devices not converged, and the recent changes. */
export function FleetView(props: { org: string }): JSX.Element {
  // A lost stream shows in the frame (the server-unreachable banner, or the live view stopping), not here.
  const { value, lastMs, pendingSince } = useConvergence(props.org);
  if (!value) return <main><p class="muted">Loading…</p></main>;
  const pct = value.devices === 0 ? 100 : Math.round((value.at_head / value.devices) * 100);
  return (
    <main>
      <h1>Fleet overview</h1>
      <div class="counts">
        <div class="count ok">
          <div class="n" data-testid="fleet-at-head">{value.at_head}</div>
          <div>at head</div>
        </div>
        <div class="count warn">
          <div class="n" data-testid="fleet-behind">{value.behind}</div>
          <div>behind</div>
        </div>
        <div class="count bad">
          <div class="n" data-testid="fleet-error">{value.error}</div>
          <div>apply error</div>
        </div>
        <div class="count">
          <div class="n" data-testid="fleet-stale">{value.stale}</div>
          <div>stale (no report)</div>
        </div>
        <div class="count">
          <div class="n" data-testid="fleet-online">{value.online}</div>
          <div>online of {value.devices}</div>
        </div>
      </div>
      <div class="panel" style={{ marginTop: '1rem' }}>
        <div class="toolbar">
          <span>
            Head revision <strong data-testid="fleet-head-revision">{value.revision}</strong>
          </span>
          <span class="spacer" />
          <span data-testid="fleet-last-convergence">
            {pendingSince !== undefined
              ? 'converging…'
              : lastMs !== undefined
                ? `last change converged in ${(lastMs / 1000).toFixed(2)} s (seen from this page)`
                : 'no change seen since this page opened'}
          </span>
        </div>
        <div
          class="bar"
          role="progressbar"
          aria-label="devices at the head revision"
          aria-valuemin={0}
          aria-valuemax={value.devices}
          aria-valuenow={value.at_head}
          data-testid="fleet-progress"
          data-value={value.at_head}
          data-max={value.devices}
        >
          <div style={{ width: `${pct}%` }} />
        </div>
        <p class="muted">
          {value.at_head} of {value.devices} devices applied revision {value.revision} ({pct}%).
        </p>
      </div>
      <h2>Not converged</h2>
      {value.not_converged.length === 0 ? (
        <p class="muted">Every device is at the head.</p>
      ) : (
        <div class="panel">
          <table>
            <thead>
              <tr>
                <th scope="col">Device</th>
                <th scope="col">Applied</th>
                <th scope="col">Apply error</th>
                <th scope="col">Last seen</th>
              </tr>
            </thead>
            <tbody>
              {value.not_converged.map((d) => (
                <tr key={d.id} data-testid="fleet-not-converged">
                  <td>
                    <a href={href('device', props.org, d.id)}>{d.hostname}</a>
                  </td>
                  <td>{d.applied_revision ?? '—'}</td>
                  <td>{d.apply_error ?? '—'}</td>
                  <td>{d.last_seen ?? 'never'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div style={{ marginTop: '1rem' }}>
        <RecentActivity org={props.org} head={value.revision} />
      </div>
    </main>
  );
}
