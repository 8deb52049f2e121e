// Thin JSON client for the designer API. The server owns the document; this
// module only carries requests and answers, it interprets nothing.

export function csrfToken() {
  const headers = document.body.getAttribute("hx-headers");
  if (headers) {
    try {
      const token = JSON.parse(headers)["X-CSRFToken"];
      if (token) return token;
    } catch {
      // fall through to the cookie
    }
  }
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

// Resolves to {status, data}; never throws for HTTP error statuses because a
// 409 or 400 is an expected answer the caller handles. Network failures throw.
export async function request(method, url, body) {
  const init = {
    method,
    credentials: /** @type {RequestCredentials} */ ("same-origin"),
    headers: { Accept: "application/json" },
  };
  if (method !== "GET") init.headers["X-CSRFToken"] = csrfToken();
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  let data = null;
  const type = response.headers.get("Content-Type") || "";
  if (type.includes("json")) data = await response.json();
  return { status: response.status, data };
}

export function documentUrl(apiBase, workflowId) {
  return `${apiBase}workflows/${workflowId}/document/`;
}

export function validateUrl(apiBase, workflowId) {
  return `${apiBase}workflows/${workflowId}/validate/`;
}
