// Package agents finds a cluster's tare agents through the API server and reads their /summary over one
// window through the API server's pod proxy (client-go), waiting for agents that started less than the
// window ago; internal/cluster folds what they said into the cluster view. It is apart from cluster so
// that the view's readers (the HTML report) do not pull in client-go.
package agents
