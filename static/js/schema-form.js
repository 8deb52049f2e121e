// Keeps a schema form's two views in step: switching "Form" -> "JSON" writes the fields into the JSON textarea,
// "JSON" -> "Form" fills the fields from it. Presentation only: the server parses and the runtime validates.
(function () {
  "use strict";

  function fieldValue(field) {
    var kind = field.dataset.kind;
    var input = field.querySelector("input, select, textarea");
    if (!input) return undefined;
    if (kind === "boolean") return input.checked;
    var text = input.value;
    if (kind !== "string") text = text.trim();
    if (text === "") return undefined;
    if (kind === "string") return text;
    if (kind === "integer" || kind === "number") {
      var n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    try { return JSON.parse(text); } catch (e) { return text; }
  }

  function setField(field, value) {
    var kind = field.dataset.kind;
    var input = field.querySelector("input, select, textarea");
    if (!input) return;
    if (kind === "boolean") { input.checked = value === true; return; }
    if (value === undefined || value === null) { input.value = ""; return; }
    if (kind === "enum") { input.value = JSON.stringify(value); return; }
    if (kind === "json") { input.value = JSON.stringify(value, null, 2); return; }
    input.value = String(value);
  }

  document.addEventListener("change", function (event) {
    var radio = event.target;
    // "_mode", or "<prefix>_mode" where one HTML form holds several schema forms (the fork form's answers).
    if (!(radio instanceof HTMLInputElement) || !/(^|\.)_mode$/.test(radio.name)) return;
    var form = radio.closest("[data-schema-form]");
    if (!form) return;
    var fields = /** @type {NodeListOf<HTMLElement>} */ (form.querySelectorAll(".sf-field[data-field]"));
    var textarea = /** @type {HTMLTextAreaElement | null} */ (form.querySelector(".sf-json textarea"));
    if (!textarea) return;
    if (radio.value === "json") {
      var value = {};
      try { value = JSON.parse(textarea.value || "{}"); } catch (e) { value = {}; }
      if (value === null || typeof value !== "object" || Array.isArray(value)) value = {};
      fields.forEach(function (field) {
        var v = fieldValue(field);
        if (v === undefined) delete value[field.dataset.field]; else value[field.dataset.field] = v;
      });
      textarea.value = JSON.stringify(value, null, 2);
    } else {
      var parsed;
      try { parsed = JSON.parse(textarea.value); } catch (e) { return; }  // keep the fields as they were
      if (parsed === null || typeof parsed !== "object") return;
      fields.forEach(function (field) { setField(field, parsed[field.dataset.field]); });
    }
  });
})();
