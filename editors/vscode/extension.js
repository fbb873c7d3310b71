// Starts `apsi lsp` (stdio) for .apsi files. The command comes from the setting apsi.command.
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("apsi").get("command", ["apsi", "lsp"]);
  const server = { command, args, transport: TransportKind.stdio };
  client = new LanguageClient("apsi", "Apsi language server", { run: server, debug: server }, {
    documentSelector: [{ scheme: "file", language: "apsi" }],
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
