/** `npm run controller` — a controller process (npm start runs one too). */
import { runControllerProcess } from "../server/controller/main";
import { env } from "../server/env";

runControllerProcess(env).catch((err: unknown) => {
  process.stderr.write(`runwarden controller: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
