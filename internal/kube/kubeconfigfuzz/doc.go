// Package kubeconfigfuzz holds only the fuzz target of kube.CheckKubeconfig. It lives apart from package
// kube because kube's tests start a real API server in TestMain, once in every process that runs them:
// each fuzz worker would spend its few seconds of the short fuzz pass starting one.
//
// Imports: none
package kubeconfigfuzz
