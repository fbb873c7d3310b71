// Tokenizes .apsi files with the grammar through vscode-textmate (what VS Code uses) and prints, as JSON,
// every token scoped invalid.illegal: {file: [[line, column, text], ...]}. Used by tests/editors.
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
const onigLib = oniguruma.loadWASM(wasm.buffer).then(() => ({
  createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
  createOnigString: (s) => new oniguruma.OnigString(s),
}));
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async () => vsctm.parseRawGrammar(
    fs.readFileSync(path.join(__dirname, "..", "syntaxes", "apsi.tmLanguage.json"), "utf8"), "apsi.json"),
});

registry.loadGrammar("source.apsi").then((grammar) => {
  const found = {};
  for (const file of process.argv.slice(2)) {
    let state = vsctm.INITIAL;
    const lines = fs.readFileSync(file, "utf8").split("\n");
    found[file] = [];
    lines.forEach((line, i) => {
      const result = grammar.tokenizeLine(line, state);
      for (const t of result.tokens) {
        if (t.scopes.some((s) => s.startsWith("invalid.illegal"))) {
          found[file].push([i + 1, t.startIndex + 1, line.slice(t.startIndex, t.endIndex)]);
        }
      }
      state = result.ruleStack;
    });
  }
  process.stdout.write(JSON.stringify(found));
});
