"""The store over DynamoDB (`store.DynamoStore`) and its item encoding (`items`)."""
