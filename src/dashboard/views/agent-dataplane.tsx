import type { JSX } from 'preact';
import { formatBytes, type PeerNames } from '../../client/index.js';
import { Ago } from '../components/ui.js';
import { href } from '../router.js';

const rec = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const strs = (v: unknown): string[] => arr(v).filter((x): x is string => typeof x === 'string');

/** One firewall rule as the agent's `status` describes it: protocol, ports (null: every port), addresses and device sets. */
function ruleText(r: Record<string, unknown>): { proto: string; ports: string; from: string } {
  const proto = str(r['protocol']) ?? '?';
  const p = rec(r['ports']);
  const from = num(p['from']);
  const to = num(p['to']);
  const ports = proto === 'icmp' || proto === 'any' || proto === 'all' ? '—' : from === null ? 'every port' : from === to ? String(from) : `${from}–${to}`;
  const addresses = [...strs(r['ipv4']), ...strs(r['ipv6'])];
  const sets = strs(r['sets']);
  const parts = [...addresses, ...sets.map((s) => `devices of set ${s}`)];
  return { proto, ports, from: parts.length === 0 || addresses.includes('0.0.0.0/0') ? 'anywhere' : parts.join(', ') };
}

function RulesTable(props: { title: string; rules: unknown[]; testId: string }): JSX.Element {
  return (
    <>
      <h3>{props.title}</h3>
      {props.rules.length === 0 ? (
        <p class="muted">None: nothing is accepted this way but replies.</p>
      ) : (
        <table data-testid={props.testId}>
          <thead>
            <tr><th scope="col">Protocol</th><th scope="col">Ports</th><th scope="col">Peers</th></tr>
          </thead>
          <tbody>
            {props.rules.map((raw, i) => {
              const r = ruleText(rec(raw));
              return (
                <tr key={i}>
                  <td>{r.proto}</td>
                  <td>{r.ports}</td>
                  <td>{r.from}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}

/**
 * What the agent's own `status` call answered, in words and tables: what it
 * applied and when, how its reports are going (failed PUTs explained), its
 * WireGuard peers by hostname, its routes and firewall rules, and what it
 * left out; the raw answer stays available, folded.
 */
export function AgentDataplane(props: { org: string; answer: unknown; names: PeerNames; now: number }): JSX.Element {
  const a = rec(props.answer);
  const report = rec(a['status_report']);
  const detail = a['detail'] === null ? null : rec(a['detail']);
  const firewall = detail ? (detail['firewall'] === null ? null : rec(detail['firewall'])) : null;
  const failed = num(report['failed']) ?? 0;
  const lastError = str(report['last_error']);
  const skipped = arr(a['skipped']).map(rec);
  const rejected = arr(a['rejected']).map(rec);
  return (
    <div class="panel" data-testid="device-dataplane">
      <h2>The agent's dataplane</h2>
      <table>
        <tbody>
          <tr><th scope="row">Applied</th><td>revision {num(a['applied_revision']) ?? '—'} {str(a['applied_at']) ? <>(<Ago at={str(a['applied_at'])} now={props.now} />)</> : null}</td></tr>
          <tr><th scope="row">Apply error</th><td class={str(a['apply_error']) ? 'field-error' : ''}>{str(a['apply_error']) ?? 'none'}</td></tr>
          <tr><th scope="row">Watch</th><td>{a['connected'] === true ? 'connected' : 'not connected'} ({str(a['watch']) ?? '?'}), tunnel {str(a['tunnel']) ?? '?'}</td></tr>
          <tr>
            <th scope="row">Status reports</th>
            <td data-testid="device-dataplane-reports">
              {num(report['sent']) ?? 0} sent ({num(report['sent_via_tunnel']) ?? 0} over the tunnel)
              {failed > 0 ? (
                <>
                  ; {failed} failed since the agent started{' '}
                  {lastError ? <span class="field-error">(the last: {lastError})</span> : <span class="muted">(the later ones went through: no failure now)</span>}
                </>
              ) : null}
            </td>
          </tr>
          <tr><th scope="row">Interface</th><td>{str(a['interface']) ?? '—'} ({str(a['dataplane']) ?? '?'}), {detail ? str(detail['address']) ?? 'no address' : 'not readable'}</td></tr>
        </tbody>
      </table>
      {detail ? (
        <>
          <h3>WireGuard peers</h3>
          {arr(detail['peers']).length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <table data-testid="device-dataplane-peers">
              <thead>
                <tr><th scope="col">Hostname</th><th scope="col">Endpoint</th><th scope="col">Allowed IPs</th><th scope="col">Handshake</th><th scope="col">RX</th><th scope="col">TX</th></tr>
              </thead>
              <tbody>
                {arr(detail['peers']).map(rec).map((p) => {
                  const key = str(p['public_key']) ?? '';
                  const peer = props.names.deviceOf({ public_key: key, device_id: str(p['device_id']) });
                  return (
                    <tr key={key} data-testid="device-dataplane-peer">
                      <td title={key}>{peer ? <a href={href('device', props.org, peer.id)}>{peer.hostname}</a> : <span class="muted">not a device of this organization</span>}</td>
                      <td>{str(p['endpoint']) ?? '—'}</td>
                      <td>{strs(p['allowed_ips']).join(', ')}</td>
                      <td><Ago at={str(p['latest_handshake'])} now={props.now} /></td>
                      <td>{formatBytes(num(p['rx_bytes']) ?? 0)}</td>
                      <td>{formatBytes(num(p['tx_bytes']) ?? 0)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
          <h3>Routes</h3>
          <p>{strs(detail['routes']).join(', ') || <span class="muted">none besides the peers'</span>}</p>
          {firewall === null ? (
            <p class="muted">Firewall: not read.</p>
          ) : firewall['mode'] === 'allow-all' ? (
            <p data-testid="device-dataplane-firewall">Firewall: everything on the tunnel is accepted (the device is in no security group).</p>
          ) : (
            <div data-testid="device-dataplane-firewall">
              <RulesTable title="Inbound rules" rules={arr(firewall['inbound'])} testId="device-dataplane-inbound" />
              <RulesTable title="Outbound rules" rules={arr(firewall['outbound'])} testId="device-dataplane-outbound" />
            </div>
          )}
        </>
      ) : (
        <p class="muted">The agent could not describe its dataplane in time.</p>
      )}
      {skipped.length + rejected.length > 0 ? (
        <>
          <h3>Left out of the desired state</h3>
          <ul>
            {skipped.map((s, i) => (
              <li key={`s${i}`}>{str(s['kind'])} {str(s['subject'])}: {str(s['reason'])}</li>
            ))}
            {rejected.map((r, i) => (
              <li key={`r${i}`}>{str(r['kind'])} {str(r['id'])}: {str(r['problem'])} ({r['kept_previous'] === true ? 'its last valid state is used' : 'left out'})</li>
            ))}
          </ul>
        </>
      ) : null}
      <details>
        <summary>The agent's answer as it came</summary>
        <pre>{JSON.stringify(props.answer, null, 2)}</pre>
      </details>
    </div>
  );
}
