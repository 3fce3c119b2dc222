// The console's whole view layer: create elements with attributes, listeners and children.
type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Array<Child | Child[]>): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) element.append(typeof child === 'number' ? String(child) : child);
  return element;
}

/** A labelled form field: the label names the control, the hint and error are read with it. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  const id = control.id || (control.id = `f-${Math.random().toString(36).slice(2, 9)}`);
  const hintElement = hint ? h('small', { id: `${id}-hint` }, hint) : null;
  const errorElement = h('small', { id: `${id}-error`, class: 'error', 'aria-live': 'polite' });
  control.setAttribute('aria-describedby', `${hint ? `${id}-hint ` : ''}${id}-error`);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintElement, errorElement);
}

export function setFieldError(control: HTMLElement, message: string | null): void {
  const error = document.getElementById(`${control.id}-error`);
  if (error) error.textContent = message ?? '';
  if (message) control.setAttribute('aria-invalid', 'true');
  else control.removeAttribute('aria-invalid');
}

/** A status line that screen readers announce: successes and errors of the last action. Pages set it after
 * re-rendering, so what it announces is already on screen. */
export type Notice = {
  element: HTMLElement;
  ok(text: string): void;
  fail(error: unknown): void;
  clear(): void;
  /** Clears the notice, runs `action`, then shows `done`, or the error it threw. */
  attempt(action: () => Promise<unknown>, done: string): Promise<void>;
};

export function notice(): Notice {
  const element = h('p', { class: 'notice', role: 'status', 'aria-live': 'polite' });
  const show = (className: string, text: string) => {
    element.className = className;
    element.textContent = text;
  };
  const ok = (text: string) => show('notice ok', text);
  const fail = (error: unknown) => show('notice fail', error instanceof Error ? error.message : String(error));
  const clear = () => show('notice', '');
  return {
    element,
    ok,
    fail,
    clear,
    async attempt(action, done) {
      clear();
      try {
        await action();
        ok(done);
      } catch (error) {
        fail(error);
      }
    },
  };
}

/**
 * A page's actions: each clears `status`, runs, refreshes the page's list, then shows the message it
 * returned (if any), or the error it threw.
 */
export function refreshingActions(status: Notice, refresh: () => Promise<void>) {
  return async (what: () => Promise<string | void>) => {
    status.clear();
    try {
      const message = await what();
      await refresh();
      if (message) status.ok(message);
    } catch (error) {
      status.fail(error);
    }
  };
}

/** A value shown once (a raw key, a secret, a token): a warning, the value and a copy button. */
export function secretPanel(title: string, value: string, warning: string): HTMLElement {
  const copied = h('span', { role: 'status', 'aria-live': 'polite' });
  const output = h('code', { class: 'secret', 'data-testid': 'secret' }, value);
  return h(
    'section',
    { class: 'once', 'aria-label': title },
    h('h3', {}, title),
    h('p', { class: 'warning' }, warning),
    output,
    h('div', { class: 'actions' },
      h('button', {
        type: 'button',
        onclick: () => {
          navigator.clipboard.writeText(value).then(() => (copied.textContent = 'Copied.'), () => (copied.textContent = 'Copy failed: select the text and copy it.'));
        },
      }, 'Copy'),
      copied,
    ),
  );
}

export function formatDate(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString() : '—';
}

export function table(caption: string, headers: string[], rows: Node[][]): HTMLElement {
  // A region that scrolls sideways on a phone: focusable, so the keyboard can scroll it too.
  return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption },
    h('table', {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, headers.map((header) => h('th', { scope: 'col' }, header)))),
      h('tbody', {}, rows.length === 0 ? h('tr', {}, h('td', { colspan: headers.length }, 'None yet.')) : rows.map((cells) => h('tr', {}, cells.map((cell) => h('td', {}, cell))))),
    ),
  );
}
