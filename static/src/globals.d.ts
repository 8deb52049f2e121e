// What the pages give their scripts besides imports: htmx, loaded by the base template first, and the events it
// dispatches (each a CustomEvent whose detail names the element, the request and, before a swap, whether to swap).
interface HtmxAjaxContext {
  target?: string | Element;
  swap?: string;
  source?: Element;
  values?: Record<string, unknown>;
}

interface Htmx {
  ajax(method: string, url: string, context?: HtmxAjaxContext): Promise<void>;
  process(element: Element): void;
  trigger(element: Element | string, name: string, detail?: unknown): void;
  swap(target: Element, html: string, spec: { swapStyle: string }): void;
}

interface HtmxEventDetail {
  elt: HTMLElement;
  target: HTMLElement;
  xhr: XMLHttpRequest;
  requestConfig?: { verb: string; path: string; elt: HTMLElement; headers: Record<string, string> };
  headers?: Record<string, string>;
  parameters?: Record<string, unknown>;
  path?: string;
  verb?: string;
  successful?: boolean;
  failed?: boolean;
  shouldSwap?: boolean;
  isError?: boolean;
  issueRequest?: (skipConfirmation?: boolean) => void;
}

type HtmxEvent = CustomEvent<HtmxEventDetail>;

interface HtmxEventMap {
  "htmx:afterRequest": HtmxEvent;
  "htmx:afterSettle": HtmxEvent;
  "htmx:afterSwap": HtmxEvent;
  "htmx:beforeOnLoad": HtmxEvent;
  "htmx:beforeRequest": HtmxEvent;
  "htmx:beforeSwap": HtmxEvent;
  "htmx:configRequest": HtmxEvent;
  "htmx:confirm": HtmxEvent;
  "htmx:responseError": HtmxEvent;
}

interface DocumentEventMap extends HtmxEventMap {}
interface HTMLElementEventMap extends HtmxEventMap {}

interface Window {
  htmx?: Htmx;
}

declare const htmx: Htmx;
