import type { Command } from "commander";
import type { CliIO } from "../io";
import { registerController } from "./controller";
import { registerDecide } from "./decide";
import { registerForecast } from "./forecast";
import { registerRun } from "./run";
import { registerToken } from "./token";
import { registerUser } from "./user";

/** Adds one subcommand (with its options and action) to the program. */
export type RegisterCommand = (program: Command, io: CliIO) => void;

/** Every subcommand, one file each; add new ones here. */
export const COMMANDS: readonly RegisterCommand[] = [registerController, registerDecide, registerForecast, registerRun, registerToken, registerUser];
