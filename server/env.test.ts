import { describe, expect, it } from "vitest";
import { readEnv } from "./env";

describe("readEnv", () => {
  it("gives the documented defaults on an empty environment", () => {
    const env = readEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.RUNWARDEN_DATA_DIR).toBe(".data");
    expect(env.RUNWARDEN_PG_PORT).toBeUndefined();
    expect(env.RUNWARDEN_CONTROLLER_HOME).toBe(".data/controller");
  });

  it("keeps the controller's home under the data dir unless it is set", () => {
    expect(readEnv({ RUNWARDEN_DATA_DIR: "/tmp/x" }).RUNWARDEN_CONTROLLER_HOME).toBe("/tmp/x/controller");
    expect(readEnv({ RUNWARDEN_DATA_DIR: "/tmp/x", RUNWARDEN_CONTROLLER_HOME: "/srv/c" }).RUNWARDEN_CONTROLLER_HOME).toBe("/srv/c");
  });

  it("reads PORT as a number and treats empty strings as unset", () => {
    expect(readEnv({ PORT: "3100", DATABASE_URL: "" }).PORT).toBe(3100);
    expect(readEnv({ DATABASE_URL: "" }).DATABASE_URL).toBeUndefined();
  });

  it("names the variable that is wrong", () => {
    expect(() => readEnv({ DATABASE_URL: "mysql://x" })).toThrow(/DATABASE_URL: must start with postgres/);
    expect(() => readEnv({ PORT: "seventy" })).toThrow(/PORT/);
    expect(() => readEnv({ PORT: "70000" })).toThrow(/PORT/);
  });
});
