"""Memory options that must be refused, each with the path its 400 names."""

from __future__ import annotations

from typing import Any

# (options as sent, the path of the field the 400 names)
BAD: list[tuple[dict[str, Any], list[str | int]]] = [
    ({"lastMessage": 5}, ["lastMessage"]),
    ({"lastMessages": 201}, ["lastMessages"]),
    ({"lastMessages": -1}, ["lastMessages"]),
    ({"lastMessages": True}, ["lastMessages"]),
    ({"lastMessages": 2.5}, ["lastMessages"]),
    ({"lastMessages": "10"}, ["lastMessages"]),
    ({"generateTitle": "yes"}, ["generateTitle"]),
    ({"generateTitle": {"model": "nope"}}, ["generateTitle", "model"]),
    ({"generateTitle": {"instructions": "x" * 4001}}, ["generateTitle", "instructions"]),
    ({"generateTitle": {"prompt": "x"}}, ["generateTitle", "prompt"]),
    ({"semanticRecall": {"topK": 0}}, ["semanticRecall", "topK"]),
    ({"semanticRecall": {"topK": 31}}, ["semanticRecall", "topK"]),
    ({"semanticRecall": {"messageRange": 11}}, ["semanticRecall", "messageRange"]),
    (
        {"semanticRecall": {"messageRange": {"before": 1, "after": 11}}},
        ["semanticRecall", "messageRange", "after"],
    ),
    (
        {"semanticRecall": {"messageRange": {"before": 1, "around": 1}}},
        ["semanticRecall", "messageRange", "around"],
    ),
    ({"semanticRecall": {"scope": "org"}}, ["semanticRecall", "scope"]),
    ({"semanticRecall": {"enabled": "on"}}, ["semanticRecall", "enabled"]),
    ({"workingMemory": {"scope": "user"}}, ["workingMemory", "scope"]),
    (
        {"workingMemory": {"template": "# Me", "schema": {"type": "object"}}},
        ["workingMemory", "schema"],
    ),
    ({"workingMemory": {"schema": {"type": "nonsense"}}}, ["workingMemory", "schema", "type"]),
    ({"workingMemory": {"schema": "object"}}, ["workingMemory", "schema"]),
    ({"workingMemory": {"agentManaged": 1}}, ["workingMemory", "agentManaged"]),
    ({"observationalMemory": {"scope": "resource"}}, ["observationalMemory", "scope"]),
    (
        {"observationalMemory": {"activateAfterIdle": "5 minutes"}},
        ["observationalMemory", "activateAfterIdle"],
    ),
    (
        {"observationalMemory": {"activateAfterIdle": -1}},
        ["observationalMemory", "activateAfterIdle"],
    ),
    (
        {"observationalMemory": {"activateAfterIdle": True}},
        ["observationalMemory", "activateAfterIdle"],
    ),
    (
        {"observationalMemory": {"observation": {"messageTokens": 999}}},
        ["observationalMemory", "observation", "messageTokens"],
    ),
    (
        {"observationalMemory": {"observation": {"messageTokens": 1_000_001}}},
        ["observationalMemory", "observation", "messageTokens"],
    ),
    (
        {"observationalMemory": {"observation": {"bufferTokens": 0}}},
        ["observationalMemory", "observation", "bufferTokens"],
    ),
    (
        {"observationalMemory": {"observation": {"bufferTokens": 1.5}}},
        ["observationalMemory", "observation", "bufferTokens"],
    ),
    (
        {"observationalMemory": {"observation": {"bufferActivation": 0}}},
        ["observationalMemory", "observation", "bufferActivation"],
    ),
    (
        {"observationalMemory": {"observation": {"bufferActivation": 1.01}}},
        ["observationalMemory", "observation", "bufferActivation"],
    ),
    (
        {"observationalMemory": {"observation": {"blockAfter": 0.9}}},
        ["observationalMemory", "observation", "blockAfter"],
    ),
    (
        {"observationalMemory": {"observation": {"blockAfter": 10.5}}},
        ["observationalMemory", "observation", "blockAfter"],
    ),
    (
        {"observationalMemory": {"observation": {"instruction": "x" * 4001}}},
        ["observationalMemory", "observation", "instruction"],
    ),
    (
        {"observationalMemory": {"observation": {"tokens": 5}}},
        ["observationalMemory", "observation", "tokens"],
    ),
    (
        {"observationalMemory": {"reflection": {"observationTokens": 10}}},
        ["observationalMemory", "reflection", "observationTokens"],
    ),
    (
        {"observationalMemory": {"reflection": {"bufferActivation": 2}}},
        ["observationalMemory", "reflection", "bufferActivation"],
    ),
    (
        {"observationalMemory": {"reflection": {"activateAfterIdle": "soon"}}},
        ["observationalMemory", "reflection", "activateAfterIdle"],
    ),
    (
        {"observationalMemory": {"retrieval": {"scope": "org"}}},
        ["observationalMemory", "retrieval", "scope"],
    ),
    (
        {
            "observationalMemory": {
                "model": "anthropic/claude-haiku-4-5",
                "observation": {"model": "openai/gpt-4o-mini"},
            }
        },
        ["observationalMemory", "observation", "model"],
    ),
    (
        {"observationalMemory": {"observation": {"manageWorkingMemory": True}}},
        ["observationalMemory", "observation", "manageWorkingMemory"],
    ),
    ({"readOnly": "true"}, ["readOnly"]),
]
