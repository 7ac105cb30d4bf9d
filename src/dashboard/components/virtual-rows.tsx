import type { ComponentChildren, CSSProperties, JSX } from 'preact';
import { useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks';
import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from '@tanstack/virtual-core';

/**
 * Renders only the rows in view (plus a few), so 10,000 rows cost what 30
 * do: @tanstack/virtual-core keeps the window, this component the DOM.
 * Rows have one fixed height.
 */
export function VirtualRows(props: {
  count: number;
  rowHeight: number;
  label: string;
  header: ComponentChildren;
  /** Row `index`, an element with role="row" given `style` (its place in the window). */
  row: (index: number, style: CSSProperties) => ComponentChildren;
}): JSX.Element {
  const scroller = useRef<HTMLDivElement>(null);
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const [virtualizer] = useState(
    () =>
      new Virtualizer<HTMLDivElement, HTMLDivElement>({
        count: props.count,
        getScrollElement: () => scroller.current,
        estimateSize: () => props.rowHeight,
        overscan: 12,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        onChange: () => rerender(undefined),
      }),
  );
  virtualizer.setOptions({
    ...virtualizer.options,
    count: props.count,
    estimateSize: () => props.rowHeight,
  });
  useLayoutEffect(() => virtualizer._didMount(), [virtualizer]);
  useLayoutEffect(() => virtualizer._willUpdate());
  const items = virtualizer.getVirtualItems();
  return (
    <div role="table" aria-label={props.label} aria-rowcount={props.count + 1}>
      <div role="rowgroup">{props.header}</div>
      <div class="scroller" ref={scroller}>
        <div role="rowgroup" style={{ height: `${virtualizer.getTotalSize()}px`, position: 'relative' }}>
          {items.map((item) =>
            props.row(item.index, { position: 'absolute', top: 0, left: 0, right: 0, height: `${props.rowHeight}px`, transform: `translateY(${item.start}px)` }),
          )}
        </div>
      </div>
    </div>
  );
}
