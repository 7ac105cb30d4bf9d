import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';

/**
 * A destructive action that asks first: a button (`opener`, with
 * `data-testid={testId}`) that turns into the question, the action's button
 * (`data-testid={testId}-confirm`) and Cancel. `onConfirm` runs once the
 * operator confirms; the question closes either way.
 */
export function ConfirmAction(props: {
  testId: string;
  /** The button that asks, e.g. "Revoke…". */
  opener: string;
  /** The confirming button, e.g. "Revoke". */
  action: string;
  /** What the dialog is called for assistive technology, e.g. "Confirm revoking web-1". */
  label: string;
  question: ComponentChildren;
  onConfirm: () => void;
  disabled?: boolean;
  /** The opener looks dangerous too (default true). */
  danger?: boolean;
}): JSX.Element {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class={props.danger === false ? undefined : 'danger'} data-testid={props.testId} disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.opener}
      </button>
    );
  }
  return (
    <div class="toolbar" role="alertdialog" aria-label={props.label}>
      <span>{props.question}</span>
      <button
        type="button"
        class="danger"
        data-testid={`${props.testId}-confirm`}
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        {props.action}
      </button>
      <button type="button" onClick={() => setAsking(false)}>Cancel</button>
    </div>
  );
}
