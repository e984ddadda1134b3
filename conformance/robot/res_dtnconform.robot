*** Settings ***
Documentation     Shared settings for dtnconform certification suites.
Library           conformance.robot.DtnConformance.DtnConformance    ${RUNS_DIR}

*** Variables ***
${RUNS_DIR}       runs
${SUT}            licklider
${SUT_OPTIONS}    ${EMPTY}

*** Keywords ***
Scenario Should Pass
    [Documentation]    Replay one generated scenario and require a pass verdict; the
    ...    model-driven tester plays ${tester} (sender, receiver, or none: the SUT
    ...    plays both sides); the run's files go to RUNS_DIR/${run}.
    [Arguments]    ${scenario}    ${tester}=none    ${run}=${EMPTY}
    Run Scenario    ${scenario}    ${SUT}    ${tester}    ${run}    ${SUT_OPTIONS}
    Verdict Should Be    pass

Interop Should Pass
    [Documentation]    Replay one scenario with ${sender} sending to ${receiver} and
    ...    require a pass verdict; a cell one of them cannot take is skipped, with why.
    [Arguments]    ${scenario}    ${sender}    ${receiver}    ${run}    ${unsupported}=${EMPTY}
    # $name, not "${name}": the reason is a value in the expression's
    # namespace, never pasted into the Python text Robot evaluates
    Skip If    $unsupported    not supported: ${unsupported}
    Run Scenario    ${scenario}    ${sender}    none    ${run}    ${EMPTY}    ${receiver}
    Verdict Should Be    pass
