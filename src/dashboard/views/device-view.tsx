import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { AGENT_METHODS } from '../../protocol/wire.js';
import { PeerNames, formatBytes, type Device, type PeerPath } from '../../client/index.js';
import { Ago, describeError, EmptyState, ErrorState } from '../components/ui.js';
import { useClient, useInformers } from '../live/context.js';
import { useConvergence, useInformerItems } from '../live/hooks.js';
import { href } from '../router.js';
import { AgentDataplane } from './agent-dataplane.js';
import { DeviceActions } from './device-actions.js';
import { DeviceGroup } from './device-group.js';

type RpcAnswer = { method: string; ok: boolean; text: string; ms: number };

const PATH_TAG: Record<PeerPath['path'], string> = { direct: 'tag ok', relay: 'tag warn', none: 'tag muted' };

/** The path to each peer as the device last reported it, peers named by the organization's devices. */
function PeersTable(props: { org: string; peers: readonly PeerPath[]; truncated: boolean; names: PeerNames; now: number }): JSX.Element {
  if (props.peers.length === 0) {
    return <EmptyState title="No peers reported">The device's agent reports the path to each peer with its status (agents from v1.9 on).</EmptyState>;
  }
  return (
    <div class="panel">
      <table data-testid="device-peers">
        <thead>
          <tr><th scope="col">Hostname</th><th scope="col">Path</th><th scope="col">Endpoint</th><th scope="col">Handshake</th><th scope="col">RX</th><th scope="col">TX</th></tr>
        </thead>
        <tbody>
          {props.peers.map((p) => {
            const peer = props.names.deviceOf(p);
            return (
              <tr key={p.public_key} data-testid="device-peer-row">
                <td data-testid="device-peer-hostname" title={p.public_key}>
                  {peer ? <a href={href('device', props.org, peer.id)}>{peer.hostname}</a> : <span class="muted">—</span>}
                </td>
                <td data-testid="device-peer-path"><span class={PATH_TAG[p.path]}>{props.names.pathOf(p)}</span></td>
                <td>{p.endpoint ?? '—'}</td>
                <td><Ago at={p.latest_handshake} now={props.now} /></td>
                <td>{formatBytes(p.rx_bytes)}</td>
                <td>{formatBytes(p.tx_bytes)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {props.truncated ? <p class="muted">The device has more peers: the {props.peers.length} most recently active are shown.</p> : null}
    </div>
  );
}

/** One device: its status, what its agent says of its dataplane, and ping and force-sync through its tunnel. */
export function DeviceView(props: { org: string; id: string }): JSX.Element {
  const client = useClient();
  useInformers();
  const objects = useInformerItems('device');
  const object = objects.items.find((d) => d.id === props.id);
  const convergence = useConvergence(props.org).value;
  const names = useMemo(() => new PeerNames(objects.items), [objects.items]);
  const [device, setDevice] = useState<Device | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [answer, setAnswer] = useState<RpcAnswer | undefined>(undefined);
  const [agentStatus, setAgentStatus] = useState<unknown>(undefined);
  const [busy, setBusy] = useState<string | undefined>(undefined);
  // The device's status changes with the organization's convergence (the server wakes that stream on status batches).
  const changed = convergence === undefined ? '' : JSON.stringify(convergence);
  useEffect(() => {
    const ac = new AbortController();
    client.devices.get(props.org, props.id, { signal: ac.signal }).then(
      (d) => {
        setDevice(d);
        setError(undefined);
      },
      (err: unknown) => {
        if (!ac.signal.aborted) setError(err);
      },
    );
    return () => ac.abort();
  }, [client, props.org, props.id, changed, object?.revision]);

  const call = async (method: string): Promise<void> => {
    setBusy(method);
    const started = performance.now();
    try {
      const result = await client.devices.rpc(props.org, props.id, method);
      const ms = Math.round(performance.now() - started);
      // The status answer is shown as the dataplane panel below, not as JSON here too.
      if (method === AGENT_METHODS.status) setAgentStatus(result);
      setAnswer({ method, ok: true, text: method === AGENT_METHODS.status ? '' : JSON.stringify(result, null, 2), ms });
    } catch (err) {
      setAnswer({ method, ok: false, text: describeError(err), ms: Math.round(performance.now() - started) });
    } finally {
      setBusy(undefined);
    }
  };

  if (error && !device) return <main><ErrorState error={error} title="Could not read the device" /></main>;
  if (!device) return <main><p class="muted">Loading…</p></main>;
  const s = device.status;
  const head = convergence?.revision;
  return (
    <main>
      <p>
        <a href={href('devices', props.org)}>← Devices</a>
      </p>
      <h1>{device.hostname}</h1>
      <div class="panel">
        <table>
          <tbody>
            <tr><th scope="row">Tunnel IP</th><td>{device.tunnel_ip}</td></tr>
            <tr><th scope="row">Online</th><td data-testid="device-online">{s.online ? 'online' : 'offline'}</td></tr>
            <tr><th scope="row">Last seen</th><td><Ago at={s.last_seen} now={Date.now()} /></td></tr>
            <tr><th scope="row">Applied revision</th><td data-testid="device-applied">{s.applied_revision ?? '—'} (head {head ?? '—'})</td></tr>
            <tr>
              <th scope="row">Apply error</th>
              <td data-testid="device-apply-error" class={s.apply_error ? 'field-error' : ''}>{s.apply_error ?? 'none'}</td>
            </tr>
            <tr><th scope="row">Agent</th><td>{s.agent_version ?? '—'} on {s.os ?? '—'}</td></tr>
            <tr><th scope="row">Endpoints</th><td>{device.endpoints.map((e) => e.address).join(', ') || '—'}</td></tr>
            <tr><th scope="row">Routes</th><td>{device.approved_cidrs.join(', ') || '—'}</td></tr>
            {/* Servers before v1.12 send no tags. */}
            <tr><th scope="row">Tags</th><td data-testid="device-tags">{(device.tags ?? []).join(', ') || '—'}</td></tr>
            <tr><th scope="row">Security group</th><td><DeviceGroup org={props.org} device={device} /></td></tr>
            <tr><th scope="row">Id</th><td><code>{device.id}</code></td></tr>
          </tbody>
        </table>
      </div>
      <DeviceActions org={props.org} device={device} />
      <h2>Peers</h2>
      {/* Servers before v1.9 send no peers. */}
      <PeersTable org={props.org} peers={s.peers ?? []} truncated={s.peers_truncated === true} names={names} now={Date.now()} />
      <h2>Ask the agent</h2>
      <div class="toolbar">
        <button type="button" data-testid="device-ping" disabled={busy !== undefined} onClick={() => void call(AGENT_METHODS.ping)}>Ping</button>
        <button type="button" data-testid="device-status-rpc" disabled={busy !== undefined} onClick={() => void call(AGENT_METHODS.status)}>Peers and rules</button>
        <button type="button" class="primary" data-testid="device-force-sync" disabled={busy !== undefined} onClick={() => void call(AGENT_METHODS.forceSync)}>Force sync</button>
        {busy ? <span class="muted" role="status">asking the agent ({busy})…</span> : null}
      </div>
      {answer ? (
        <div class="panel" data-testid="device-rpc-result" data-method={answer.method} data-ok={String(answer.ok)} role="status">
          <strong>{answer.method}</strong>: {answer.ok ? 'answered' : 'failed'} in {answer.ms} ms
          {answer.text ? <pre>{answer.text}</pre> : null}
        </div>
      ) : null}
      {agentStatus !== undefined ? <AgentDataplane org={props.org} answer={agentStatus} names={names} now={Date.now()} /> : null}
    </main>
  );
}
