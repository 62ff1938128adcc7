// The SDK's own response types, named here so ts-json-schema-generator turns each into a JSON
// Schema (schema/sdk.json) that the checks validate every answer against at run time.
import type * as Sdk from "@langchain/langgraph-sdk";

export type Assistant = Sdk.Assistant;
export type AssistantVersion = Sdk.AssistantVersion;
export type AssistantGraph = Sdk.AssistantGraph;
export type GraphSchema = Sdk.GraphSchema;
export type Thread = Sdk.Thread;
export type ThreadState = Sdk.ThreadState;
export type Run = Sdk.Run;
export type Item = Sdk.Item;
export type SearchItemsResponse = Sdk.SearchItemsResponse;
export type ListNamespaceResponse = Sdk.ListNamespaceResponse;
export type Cron = Sdk.Cron;
export type Message = Sdk.Message;
export type Config = Sdk.Config;
export type Interrupt = Sdk.Interrupt;
