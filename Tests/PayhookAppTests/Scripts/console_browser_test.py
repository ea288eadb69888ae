"""Drives the on-call console in a real browser (Debian's chromium through chromium-driver).

Run by ConsoleBrowserTests (Swift), which starts payhook, seeds the dead letters named below,
and checks the database afterwards. This script checks what an operator sees and that nothing
from a webhook body runs: sign-in, a wrong token, a dead letter whose body holds <script> and
<img onerror> (shown as text), dry run, a POST without a CSRF token (403), discard without a
note (refused), replay (processed), search, sign-out. A screenshot of each page goes to
--screenshots. Exit status 0 when every check passed; otherwise the failed check is printed.

Selenium is told where chromium and its driver are, so it downloads nothing.
"""

import argparse
import base64
import os
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

XSS_SCRIPT = "<script>window.payhookXSS=1</script>"
XSS_IMG = "<img src=x onerror=window.payhookXSS=2>"


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="admin listener, e.g. http://127.0.0.1:9090")
    parser.add_argument("--token", required=True)
    parser.add_argument("--letter", required=True, help="open letter of a delivery whose body carries the XSS strings")
    parser.add_argument("--job-letter", required=True, help="another open letter, for discard without a note")
    parser.add_argument("--psp", required=True, help="pspReference of the delivery, to search for")
    parser.add_argument("--order", required=True, help="an order with a payment and a callback")
    parser.add_argument("--subscription", required=True, help="a past-due subscription with declined charges")
    parser.add_argument("--screenshots", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = parser.parse_args()
    os.makedirs(args.screenshots, exist_ok=True)

    options = webdriver.ChromeOptions()
    options.binary_location = args.chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1366,900", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    # The browser's console: a CSP violation (an inline style or script the policy blocked) or a
    # script error shows up there as SEVERE.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    profile = tempfile.mkdtemp(prefix="payhook-console-chromium-")
    options.add_argument("--user-data-dir=" + profile)
    driver = webdriver.Chrome(service=Service(executable_path=args.chromedriver), options=options)
    try:
        run(driver, args)
    except CheckFailed as failure:
        shot(driver, args, "failure")
        print("FAILED: " + str(failure), flush=True)
        return 1
    finally:
        driver.quit()
    print("console browser test passed", flush=True)
    return 0


def shot(driver, args, name):
    # The full page, not just the window: long tables and payloads are what need looking at.
    # Chromium draws beyond the viewport on request (DevTools); resizing the window instead left
    # some pages cut at the window's height.
    path = os.path.join(args.screenshots, name + ".png")
    try:
        size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 4000), "scale": 1}
        data = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip})
        with open(path, "wb") as file:
            file.write(base64.b64decode(data["data"]))
    except Exception:  # an older driver without these commands: the window's worth
        driver.save_screenshot(path)


def nothing_executed(driver, where):
    try:
        text = driver.switch_to.alert.text
        raise CheckFailed(f"{where}: an alert fired: {text!r}")
    except NoAlertPresentException:
        pass
    check(driver.execute_script("return typeof window.payhookXSS") == "undefined",
          f"{where}: script from the webhook body ran (window.payhookXSS is set)")
    # The wrong-token page is answered with 401 on purpose; Chrome logs that as a failed load.
    severe = [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"
              and "/console/sign-in - Failed to load resource: the server responded with a status of 401" not in entry["message"]]
    check(not severe, f"{where}: the browser reported errors: {severe}")


def click_and_wait(driver, button):
    """Clicks a button that submits a form and waits for the next page: a click returns as soon
    as the event is dispatched, and the old page would otherwise still be read."""
    page = driver.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(driver, 30).until(lambda _: replaced(page))


def replaced(element):
    """Whether `element` left the document. Selenium's `staleness_of` expects a
    StaleElementReferenceException; Chrome, asked about a node while the next page replaces the
    document, may answer "Node with given id does not belong to the document" instead, which
    means the same."""
    try:
        element.is_enabled()
        return False
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            return True
        raise


def flash(driver):
    found = driver.find_elements(By.CSS_SELECTOR, ".flash")
    return " ".join(node.text for node in found)


def letter_status(driver):
    return driver.find_element(By.CSS_SELECTOR, "dl.facts dd .badge").text


def sign_in(driver, args, token, name=""):
    driver.get(args.base + "/console")
    driver.find_element(By.NAME, "token").send_keys(token)
    if name:
        driver.find_element(By.NAME, "name").send_keys(name)
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "button[type=submit]"))


def post_without_csrf(driver, args, path, fields):
    """A POST carrying the signed-in session's cookie but no CSRF token."""
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in driver.get_cookies())
    request = urllib.request.Request(args.base + path, data=urllib.parse.urlencode(fields).encode(), method="POST",
                                     headers={"Cookie": cookies, "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def run(driver, args):
    base = args.base
    letter_url = f"{base}/console/dead-letters/{args.letter}"

    # Sign-in page, and a wrong token: an error, no session.
    driver.get(base + "/console")
    check(driver.find_elements(By.CSS_SELECTOR, "input[type=password][name=token]"), "no password field named token")
    shot(driver, args, "01-sign-in")
    sign_in(driver, args, "not-the-token")
    check("not the admin token" in flash(driver), f"wrong token: no error shown ({flash(driver)!r})")
    check(not any(c["name"] == "payhook_console" for c in driver.get_cookies()), "wrong token: a session cookie was set")
    shot(driver, args, "02-wrong-token")
    driver.get(base + "/console/dead-letters")
    check(driver.find_elements(By.NAME, "token"), "wrong token: the dead letters page opened without a session")

    # The right token starts a session with an HttpOnly, SameSite=Strict cookie.
    sign_in(driver, args, args.token, "browser-test")
    check(driver.find_elements(By.XPATH, "//h1[text()='Overview']"), "sign-in did not reach the overview")
    session = [c for c in driver.get_cookies() if c["name"] == "payhook_console"]
    check(session and session[0].get("httpOnly") and session[0].get("sameSite") == "Strict",
          f"session cookie flags: {session}")
    check("browser-test" in driver.find_element(By.CSS_SELECTOR, ".who").text, "the operator's name is not shown")
    nothing_executed(driver, "overview")
    # A day of varied history, drawn: bars and lines with a <title> per point, and every chart's
    # figures in a table under it.
    check(driver.find_elements(By.CSS_SELECTOR, "svg.chart-plot rect.bar"), "the overview draws no bars")
    check(driver.find_elements(By.CSS_SELECTOR, "svg.chart-plot path.line"), "the overview draws no lines")
    check(driver.find_elements(By.CSS_SELECTOR, "svg.chart-plot rect.bar title"), "bars carry no <title> for hover")
    tables = driver.find_elements(By.CSS_SELECTOR, "figure.chart details.chart-table table")
    check(len(tables) == len(driver.find_elements(By.CSS_SELECTOR, "figure.chart")), "a chart has no table of its figures")
    check("duplicate (acknowledged, stored once)" in driver.find_element(By.TAG_NAME, "main").text, "the overview does not chart duplicates")
    shot(driver, args, "03-overview")
    driver.get(base + "/console?window=7d")
    check(driver.find_element(By.CSS_SELECTOR, "nav.windows a.current").text == "last 7 days", "the 7-day window is not marked current")
    nothing_executed(driver, "overview, 7 days")
    shot(driver, args, "03b-overview-7d")
    driver.get(base + "/console")

    # The list: the hostile error text is shown as text.
    driver.get(base + "/console/dead-letters")
    check(driver.find_elements(By.CSS_SELECTOR, f"a[href='/console/dead-letters/{args.letter}']"), "the letter is not listed")
    check(XSS_SCRIPT in driver.find_element(By.TAG_NAME, "main").text, "the error's <script> is not shown as text")
    nothing_executed(driver, "dead letters list")
    shot(driver, args, "04-dead-letters")

    # The letter: body and error shown as text; no element came from them.
    driver.get(letter_url)
    text = driver.find_element(By.TAG_NAME, "main").text
    check(XSS_SCRIPT in text and XSS_IMG in text, "the body's <script> and <img onerror> are not shown as text")
    check(len(driver.find_elements(By.TAG_NAME, "img")) == 0, "an <img> element came from the body")
    scripts = driver.find_elements(By.TAG_NAME, "script")
    check(len(scripts) == 1 and scripts[0].get_attribute("src").endswith("/console/console.js"),
          "a script element other than /console/console.js is on the page")
    check(letter_status(driver) == "open", "the letter should start open")
    nothing_executed(driver, "dead letter")
    shot(driver, args, "05-dead-letter")

    # Dry run: says what a replay would do, changes nothing.
    click_and_wait(driver, driver.find_element(By.XPATH, "//button[text()='Dry run']"))
    check("Dry run, nothing changed" in flash(driver), f"dry run message missing ({flash(driver)!r})")
    check(letter_status(driver) == "open", "dry run changed the letter")
    nothing_executed(driver, "dry run")
    shot(driver, args, "06-dry-run")

    # A POST without the CSRF token: 403, nothing changes.
    status = post_without_csrf(driver, args, f"/console/dead-letters/{args.letter}/replay", {"note": "forged"})
    check(status == 403, f"a replay without a CSRF token answered {status}, not 403")
    driver.get(letter_url)
    check(letter_status(driver) == "open", "the CSRF-less replay changed the letter")

    # Discard without a note: refused, nothing changes.
    driver.get(f"{base}/console/dead-letters/{args.job_letter}")
    click_and_wait(driver, driver.find_element(By.XPATH, "//button[text()='Discard']"))
    check("Discard refused" in flash(driver), f"discard without a note was not refused ({flash(driver)!r})")
    check(letter_status(driver) == "open", "discard without a note changed the letter")
    shot(driver, args, "07-discard-without-note")

    # Replay with a note: the letter is replayed and the delivery processed.
    driver.get(letter_url)
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/dead-letters/{args.letter}/replay'] textarea").send_keys(
        "provider outage over")
    click_and_wait(driver, driver.find_element(By.XPATH, "//button[text()='Replay']"))
    check("pending again" in flash(driver), f"replay message missing ({flash(driver)!r})")
    check(letter_status(driver) == "replayed", "the letter is not replayed")
    deadline = time.monotonic() + 60
    while "processed" not in [b.text for b in driver.find_elements(By.CSS_SELECTOR, ".badge")]:
        check(time.monotonic() < deadline, "the replayed delivery was not processed")
        time.sleep(0.5)
        driver.get(letter_url)
    nothing_executed(driver, "replayed letter")
    shot(driver, args, "08-replayed")

    # Search by the provider payment id: the journey, with the reference shown as text.
    driver.get(base + "/console/search?q=" + urllib.parse.quote(args.psp))
    stages = [node.text.lower() for node in driver.find_elements(By.CSS_SELECTOR, "ol.timeline .stage")]
    for stage in ("received", "verified", "processed", "payment"):
        check(stage in stages, f"search journey lacks {stage}: {stages}")
    check(XSS_SCRIPT in driver.find_element(By.TAG_NAME, "main").text, "the merchant reference is not shown as text")
    nothing_executed(driver, "search")
    shot(driver, args, "09-search")

    driver.get(base + "/console/subscriptions")
    check(driver.find_elements(By.CSS_SELECTOR, f"a[href='/console/subscriptions/{args.subscription}']"),
          "the subscription is not listed")
    shot(driver, args, "10-subscriptions")
    driver.get(f"{base}/console/subscriptions/{args.subscription}")
    text = driver.find_element(By.TAG_NAME, "main").text
    check("plan-<b>gold</b>" in text, "the subscription's reference is not shown as text")
    check(f"phbrowser-sub-{args.subscription}-c1-a2" in text, "the charge attempts' idempotency keys are not shown")
    check(driver.find_elements(By.XPATH, "//button[text()='Resume']"), "a past-due subscription offers no Resume")
    shot(driver, args, "11-subscription")
    driver.get(f"{base}/console/orders/{args.order}")
    text = driver.find_element(By.TAG_NAME, "main").text
    check("PSP-ORDER-77" in text and "order.paid" in text and "HTTP 200" in text,
          "the order page lacks its payment or its callback and answer")
    shot(driver, args, "12-order")

    # A provider's page and the three waiting lists.
    driver.get(base + "/console/providers/adyen")
    text = driver.find_element(By.TAG_NAME, "main").text
    check("Last delivery received" in text and "Key-ring rotation" in text, "the provider page lacks its facts")
    check("by the current key" in text and "last use of a previous key" in text, "the provider page does not show which key verified")
    check(driver.find_elements(By.CSS_SELECTOR, "svg.chart-plot"), "the provider page draws no chart")
    nothing_executed(driver, "provider page")
    shot(driver, args, "14-provider-adyen")
    driver.get(base + "/console/waiting/provider")
    check("HIST-ADYEN-STUCK" in driver.find_element(By.TAG_NAME, "main").text, "the stuck Adyen payment is not listed")
    nothing_executed(driver, "waiting on the provider")
    shot(driver, args, "15-waiting-provider")
    driver.get(base + "/console/waiting/merchant")
    check("https://shop.example/hooks/payhook" in driver.find_element(By.TAG_NAME, "main").text, "the failing endpoint is not listed")
    nothing_executed(driver, "waiting on the merchant")
    shot(driver, args, "16-waiting-merchant")
    driver.get(base + "/console/waiting/human")
    check(driver.find_elements(By.CSS_SELECTOR, "form[action$='/resolve'] input[name=csrf]"), "charges resolve has no CSRF field")
    check(driver.find_elements(By.XPATH, "//button[text()='Re-check']"), "an order in review offers no re-check")
    nothing_executed(driver, "waiting on a human")
    shot(driver, args, "17-waiting-human")

    # Sign-out ends the session: the console asks for the token again.
    driver.get(base + "/console")
    click_and_wait(driver, driver.find_element(By.XPATH, "//button[text()='Sign out']"))
    check(driver.find_elements(By.NAME, "token"), "sign-out did not return to the sign-in form")
    driver.get(base + "/console/dead-letters")
    check(driver.find_elements(By.NAME, "token"), "after sign-out the console still opened")
    shot(driver, args, "18-signed-out")


if __name__ == "__main__":
    sys.exit(main())
