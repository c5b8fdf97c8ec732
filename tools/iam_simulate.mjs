// Evaluates many IAM requests in one process with @cloud-copilot/iam-simulate.
// stdin: {"requests": [{"id", "principal", "action", "resource", "resource_account",
//          "identity_policies": [{"name", "policy"}], "resource_policy"?: {...}, "context"?: {...}}]}
// stdout: {"results": [{"id", "decision": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied" | "Error",
//          "errors"?: string}]}
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const { requests } = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const results = []
for (const r of requests) {
  const simulation = {
    request: {
      principal: r.principal,
      action: r.action,
      resource: { resource: r.resource, accountId: r.resource_account },
      contextVariables: r.context || {},
    },
    identityPolicies: r.identity_policies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: r.resource_policy || undefined,
  }
  const response = await runSimulation(simulation, {})
  if (response.resultType === 'error') {
    results.push({ id: r.id, decision: 'Error', errors: JSON.stringify(response.errors) })
  } else {
    results.push({ id: r.id, decision: response.overallResult })
  }
}
process.stdout.write(JSON.stringify({ results }))
