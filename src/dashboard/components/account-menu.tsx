import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * The signed-in user's controls behind one button at the header's end
 * (`data-testid="account-menu"`), so the organization's tabs keep the
 * header to one line: the menu's `children` show below it while open. It
 * closes on a choice that navigates, a click outside, and Escape (which
 * gives the focus back to its button).
 */
export function AccountMenu(props: { children: ComponentChildren }): JSX.Element {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDetailsElement>(null);
  // Listening from the first render, not from the opening: a link chosen before an effect tied to
  // `open` had run left the menu open on the next page.
  useEffect(() => {
    const outside = (e: Event): void => {
      if (!(e.target instanceof Node) || !ref.current?.contains(e.target)) setOpen(false);
    };
    const close = (): void => setOpen(false);
    document.addEventListener('pointerdown', outside);
    addEventListener('hashchange', close);
    return () => {
      document.removeEventListener('pointerdown', outside);
      removeEventListener('hashchange', close);
    };
  }, []);
  return (
    <details
      ref={ref}
      class="account-menu"
      open={open}
      onToggle={(e) => setOpen(e.currentTarget.open)}
      onKeyDown={(e) => {
        if (e.key !== 'Escape' || !open) return;
        setOpen(false);
        ref.current?.querySelector('summary')?.focus();
      }}
    >
      <summary data-testid="account-menu">Account</summary>
      <div class="account-menu-items">{props.children}</div>
    </details>
  );
}
