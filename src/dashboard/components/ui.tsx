import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ConflictError, FleetplaneError, ValidationError } from '../../client/index.js';
import { inWords } from './field-words.js';

export function EmptyState(props: { title: string; children?: ComponentChildren }): JSX.Element {
  return (
    <div class="panel" role="status">
      <strong>{props.title}</strong>
      {props.children ? <div class="muted">{props.children}</div> : null}
    </div>
  );
}

/** What went wrong, in words an operator can act on. */
export function describeError(err: unknown): string {
  if (err instanceof FleetplaneError) return `${err.message}${err.status ? ` (${err.status} ${err.code})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}

export function ErrorState(props: { error: unknown; title?: string }): JSX.Element {
  return (
    <div class="banner bad" role="alert">
      <strong>{props.title ?? 'Something went wrong'}:</strong> {describeError(props.error)}
    </div>
  );
}

/**
 * The server's error at `path` (e.g. `/inbound_rules/0/from_port`) or a
 * field below it (with `exact`, only at `path`), in words (field-words.ts):
 * a 400's validation message, or a 409 that names a field, such as
 * `already_exists` at `/name`. Undefined when the error names no such field.
 */
export function fieldError(err: unknown, path: string, exact = false): string | undefined {
  if (!(err instanceof ValidationError || err instanceof ConflictError)) return undefined;
  const at = err.details?.['path'];
  if (typeof at !== 'string' || !(at === path || (!exact && at.startsWith(`${path}/`)))) return undefined;
  const expected = err.details?.['expected'];
  // Shown at its field, the message needs no path.
  const message = typeof expected === 'string' ? expected : err.message.startsWith(`${at}: `) ? err.message.slice(at.length + 2) : err.message;
  return inWords(at, message);
}

/**
 * The server's error at the field `path` names, in words (with `exact`, only
 * that path, not a field under it), after `subject` when given (the entry of
 * a list field it is about); the server's own message is its title.
 */
export function FieldError(props: { error: unknown; path: string; id?: string; exact?: boolean; subject?: string | undefined }): JSX.Element | null {
  const message = fieldError(props.error, props.path, props.exact);
  const server = props.error instanceof Error ? props.error.message : undefined;
  return message ? (
    <div class="field-error" role="alert" id={props.id} data-testid="sg-field-error" data-path={props.path} title={server !== message ? server : undefined}>
      {props.subject ? `${props.subject}: ${message}` : message}
    </div>
  ) : null;
}

/** A secret shown once, with a copy button and the warning that it won't be shown again. */
export function SecretOnce(props: { label: string; secret: string; onDone: () => void }): JSX.Element {
  const [copied, setCopied] = useState(false);
  return (
    <div class="panel" role="region" aria-label={props.label}>
      <strong>{props.label}</strong>
      <p class="muted">Copy it now: it is shown only once.</p>
      <div class="secret" data-testid="secret-value">
        {props.secret}
      </div>
      <div class="toolbar" style={{ marginTop: '0.5rem' }}>
        <button
          type="button"
          data-testid="secret-copy"
          onClick={() => {
            void navigator.clipboard?.writeText(props.secret).then(() => setCopied(true), () => setCopied(false));
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={props.onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

/** "12 s ago", with the exact time as the title. */
export function Ago(props: { at: string | null; now: number }): JSX.Element {
  if (props.at === null) return <span class="muted">never</span>;
  const t = Date.parse(props.at);
  const s = Math.max(0, Math.round((props.now - t) / 1000));
  const text = s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : s < 86_400 ? `${Math.round(s / 3600)} h ago` : `${Math.round(s / 86_400)} d ago`;
  return <time dateTime={props.at} title={new Date(t).toLocaleString()}>{text}</time>;
}
