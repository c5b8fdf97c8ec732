// Evaluate IAM requests as AWS does, with @cloud-copilot/iam-simulate (pinned in package.json).
// stdin: a JSON array of {principal, action, resource, accountId, identityPolicies, resourcePolicy,
// context}; stdout: a JSON array, one {decision, errors} per request, in order.
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const requests = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const out = []
for (const r of requests) {
  const simulation = {
    identityPolicies: r.identityPolicies.map((policy, i) => ({ name: `policy${i}`, policy })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: r.resourcePolicy ?? undefined,
    request: {
      action: r.action,
      principal: r.principal,
      resource: { resource: r.resource, accountId: r.accountId },
      contextVariables: r.context ?? {},
    },
  }
  const response = await runSimulation(simulation, {})
  if (response.resultType === 'error') {
    out.push({ decision: 'Error', errors: response.errors })
  } else {
    out.push({ decision: response.overallResult })
  }
}
process.stdout.write(JSON.stringify(out))
