/** Types of scripts/prepare-test-tools.mjs, for its unit spec. */

/** The tools the test suite drives, each with the Debian package that provides it and what needs it. */
export declare const TEST_TOOLS: ReadonlyArray<{ command: string; package: string; neededBy: string }>;

/** What the decision needs from the machine. */
export interface ToolsHost {
  /** The path of `command` on the PATH, or undefined. */
  which: (command: string) => string | undefined;
  /** Whether the file at `path` exists and is executable. */
  exists: (path: string) => boolean;
  /** This process's user id (undefined where there is none, on Windows). */
  uid: number | undefined;
  /** `CHROMIUM_PATH`, when set. */
  chromiumPath: string | undefined;
  /** Runs a command, its output shown, and answers its exit code. */
  run: (command: string, args: string[], env: Record<string, string>) => number;
  /** Writes one line for the user. */
  say: (line: string) => void;
}

/** Installs the missing tools when it can, or says how; answers the exit code for `npm test`. */
export declare function prepareTestTools(host: ToolsHost): number;
