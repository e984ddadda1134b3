"""The ground floor: types, errors, wire facts, classifiers, the protocol
contract and its registry. It imports nothing of dtnconform above it."""
