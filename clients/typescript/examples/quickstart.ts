import { AgentMemory, NotFound } from "@agent-memory/client";

const client = new AgentMemory({
  baseUrl: process.env["AGENT_MEMORY_URL"] ?? "http://127.0.0.1:8080",
  token: process.env["AGENT_MEMORY_TOKEN"] ?? "",
});

// A session of an agent: its turns teach the session's memory.
const agent = await client.agents.create({ name: "travel-planner" });
const session = await client.sessions.create({ agentId: agent.id });
await client.sessions.postTurn(session.id, {
  items: [
    { role: "user", content: "Remember that my budget is 1500 EUR" },
    { role: "assistant", content: "Noted: 1500 EUR." },
  ],
});
for await (const item of client.sessions.items.iterate(session.id)) {
  console.log(`${item.role}: ${item.content}`);
}
// Learning runs in the background and takes a second or two.
let memory = await client.sessions.memory.text(session.id);
for (let tries = 0; memory.keys.length === 0 && tries < 50; tries++) {
  await new Promise((resolve) => setTimeout(resolve, 200));
  memory = await client.sessions.memory.text(session.id);
}
console.log(memory.text); // what the agent's model is given: "... budget: The user's budget is 1500 EUR."

// A thread: one user's conversation with the agent. Recall needs the retrieval option,
// set on the agent's draft, published and activated.
await client.agents.patchDraft(agent.id, {
  options: { workingMemory: true, observationalMemory: { retrieval: true } },
});
const version = await client.agents.publish(agent.id);
await client.agents.activate(agent.id, version.number);
const thread = await client.threads.create({ agentId: agent.id });
await client.threads.messages.save(thread.id, [
  { role: "user", content: "My cat is called Miso." },
  { role: "assistant", content: "What a lovely name!" },
]);
const context = await client.threads.context(thread.id, "What is my cat called?");
console.log("tools:", context.tools.map((tool) => tool.name).join(", "));
const [best] = await client.threads.recall(thread.id, { query: "cat" });
console.log("recalled:", best?.["content"]);

try {
  await client.sessions.get("s_missing");
} catch (error) {
  if (!(error instanceof NotFound)) throw error;
  console.log(`${error.status} ${error.code}: ${error.message}`);
}
