from agent_memory.adapters.dynamodb.store import DynamoStore

__all__ = ["DynamoStore"]
