*** Settings ***
Documentation     Shared settings for dtnconform certification suites.
Library           conformance.robot.DtnConformance.DtnConformance    ${RUNS_DIR}

*** Variables ***
${RUNS_DIR}       runs
${SUT}            licklider

*** Keywords ***
Scenario Should Pass
    [Documentation]    Replay one generated scenario and require a pass verdict.
    [Arguments]    ${scenario}
    Run Scenario    ${scenario}    ${SUT}
    Verdict Should Be    pass
