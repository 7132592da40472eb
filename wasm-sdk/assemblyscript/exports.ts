export * from "./assembly/exports";
