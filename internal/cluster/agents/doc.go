// Package agents finds a cluster's tare agents through the API server and reads their /summary over one
// window from each agent at its node's address, over TLS with the caller's own credentials (which the agent
// checks with the API server: the pod proxy would forward none), waiting for agents that started less than the
// window ago; internal/cluster folds what they said into the cluster view. It is apart from cluster so
// that the view's readers (the HTML report) do not pull in client-go.
//
// It imports cluster, summary, kube (the client and the pods), deploy (the agents' labels and port) and bounded (an agent's answer is read within a bound). A
// new way to reach the agents (another proxy, a direct address) goes here, returning the same per-node
// results.
//
// Imports: bounded, cluster, deploy, kube, summary
package agents
