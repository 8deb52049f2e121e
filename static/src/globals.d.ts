// What the pages give these islands besides their imports: htmx, loaded by the base template before them.
interface HtmxAjaxContext {
  target?: string | Element;
  swap?: string;
  source?: Element;
  values?: Record<string, unknown>;
}

interface Htmx {
  ajax(method: string, url: string, context?: HtmxAjaxContext): Promise<void>;
  process(element: Element): void;
}

interface Window {
  htmx?: Htmx;
}
