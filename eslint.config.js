// ESLint for the front-end islands: the recommended JavaScript rules plus the
// two classic React hooks rules (hooks called unconditionally, effect
// dependencies complete). Run by `make lint` and `make test`.
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";

export default [
  { ignores: ["static/dist/**", "node_modules/**", ".venv/**", "test-artifacts/**"] },
  js.configs.recommended,
  {
    files: ["static/src/**/*.{js,jsx}"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      globals: { ...globals.browser },
      parserOptions: { ecmaFeatures: { jsx: true } },
    },
    plugins: { "react-hooks": reactHooks },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error",
      // JSX uses imported components; plain no-unused-vars cannot see that use.
      "no-unused-vars": ["error", { varsIgnorePattern: "^[A-Z_]", argsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
  {
    // Plain scripts the templates load (no bundler, no modules).
    files: ["static/js/**/*.js"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "script",
      globals: { ...globals.browser, htmx: "readonly" },
    },
    rules: { "no-unused-vars": ["error", { caughtErrors: "none" }] },
  },
  {
    files: ["static/src/**/*.test.js", "*.config.js"],
    languageOptions: { globals: { ...globals.node } },
  },
];
