import path from "node:path";

/**
 * Client code imports from the server side only through `server/shared/` (pure modules, no I/O).
 *
 * Client code is every file under `components/` (the folder is client-only: its modules end up
 * in the browser bundle through the client components that import them) and every other file
 * that starts with a "use client" directive (the client files of `app/**` and `trpc/`). Server
 * components, route handlers and `trpc/server.tsx` have no directive and may import read models
 * and the tRPC caller. A type-only import (`import type`) carries no code into the bundle, so it
 * is allowed (the tRPC client needs the router's type).
 */
const SHARED = "server/shared";

function isUseClient(program) {
  for (const statement of program.body) {
    if (statement.type !== "ExpressionStatement" || typeof statement.directive !== "string") return false;
    if (statement.directive === "use client") return true;
  }
  return false;
}

/** The project-relative path an import names, or null for a package. */
function target(spec, filename, cwd) {
  if (spec.startsWith("@/")) return path.posix.normalize(spec.slice(2));
  if (spec.startsWith(".")) return path.relative(cwd, path.resolve(path.dirname(filename), spec)).split(path.sep).join("/");
  return null;
}

function isServerOutsideShared(to) {
  return (to === "server" || to.startsWith("server/")) && to !== SHARED && !to.startsWith(`${SHARED}/`);
}

const clientImportsShared = {
  meta: {
    type: "problem",
    docs: { description: "Client code may import from server/shared and nowhere else under server/." },
    messages: {
      outsideShared: "Client code imports from the server side only through server/shared (pure modules); '{{spec}}' is not there (ARCHITECTURE.md, the rooms).",
    },
    schema: [],
  },
  create(context) {
    const cwd = context.cwd;
    const filename = context.filename;
    const relative = path.relative(cwd, filename).split(path.sep).join("/");
    let client = relative.startsWith("components/");
    function checkSource(node, source, typeOnly) {
      if (!client || typeOnly || !source || typeof source.value !== "string") return;
      const to = target(source.value, filename, cwd);
      if (to !== null && isServerOutsideShared(to)) context.report({ node, messageId: "outsideShared", data: { spec: source.value } });
    }
    return {
      Program(node) {
        client = client || isUseClient(node);
      },
      ImportDeclaration(node) {
        const typeOnly = node.importKind === "type" || (node.specifiers.length > 0 && node.specifiers.every((s) => s.importKind === "type"));
        checkSource(node, node.source, typeOnly);
      },
      ExportNamedDeclaration(node) {
        checkSource(node, node.source, node.exportKind === "type");
      },
      ExportAllDeclaration(node) {
        checkSource(node, node.source, node.exportKind === "type");
      },
      ImportExpression(node) {
        if (node.source.type === "Literal") checkSource(node, node.source, false);
      },
    };
  },
};

export const runwardenPlugin = { meta: { name: "runwarden" }, rules: { "client-imports-shared": clientImportsShared } };
