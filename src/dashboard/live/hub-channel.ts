import type { FleetplaneClient } from '../../client/index.js';
import { PageHub } from './page-hub.js';
import type { HubChannel } from './page-link.js';
import type { HubMessage } from './page-messages.js';

/** Where the build put the worker's script (index.html's `fleetplane-worker` meta). */
function workerUrl(): string | undefined {
  return document.querySelector<HTMLMetaElement>('meta[name="fleetplane-worker"]')?.content || undefined;
}

/**
 * The tab's way to the page hub: the SharedWorker every tab of this
 * browser shares when the browser has one, else a hub in this page (one
 * stream per tab, as before). `client` is used only by an in-page hub.
 */
export function connectHub(client: FleetplaneClient): { channel: HubChannel; shared: boolean } {
  const url = workerUrl();
  if (typeof SharedWorker === 'function' && url !== undefined) {
    const worker = new SharedWorker(url, { type: 'module', name: 'fleetplane' });
    const port = worker.port;
    const lock = `fleetplane-tab-${crypto.randomUUID()}`;
    port.start();
    // Held until the tab goes: the worker waits for it to drop this tab's streams. Named to the worker only once
    // granted: a worker asking first would get it at once and take the tab for gone.
    void navigator.locks.request(lock, () => {
      port.postMessage({ t: 'hello', lock });
      return new Promise<never>(() => undefined);
    });
    return {
      shared: true,
      channel: {
        post: (m) => port.postMessage(m),
        onMessage: (handler) => {
          // The worker posts its messages in batches (worker.ts).
          const l = (e: MessageEvent<HubMessage[]>): void => {
            for (const m of e.data) handler(m);
          };
          port.addEventListener('message', l);
          return () => port.removeEventListener('message', l);
        },
      },
    };
  }
  const hub = new PageHub(client);
  const handlers = new Set<(m: HubMessage) => void>();
  const deliver = (m: HubMessage): void => {
    for (const h of handlers) h(m);
  };
  return {
    shared: false,
    channel: {
      post: (m) => {
        if (m.t === 'follow') hub.follow(m.org, deliver);
        else if (m.t === 'leave') hub.leave(m.org, deliver);
      },
      onMessage: (handler) => {
        handlers.add(handler);
        return () => handlers.delete(handler);
      },
    },
  };
}
