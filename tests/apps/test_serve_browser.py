"""The web board in a real headless browser (Debian's chromium driven by Selenium through
chromium-driver): complete games by clicking, Go's pass, a Xiangqi move as piece then
target with the legal targets highlighted, illegal clicks refused, two tabs, the analysis
overlay. Screenshots go to the test's folder, or to $AZJAX_SCREENSHOTS where set."""

import os
import random
from pathlib import Path

import pytest

pytest.importorskip(
    "starlette", reason="the serve extra is not installed: pip install -e '.[serve]'"
)
pytest.importorskip("selenium", reason="selenium is not installed: pip install -e '.[test]'")

from conftest import require_program  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402
from web import Client  # noqa: E402

# A browser per module and a compiled agent per game: minutes, so with the slow checks
# (`pytest -m slow`, which CI runs and where a missing chromium fails instead of skipping).
pytestmark = pytest.mark.slow

_PATHS = ("/usr/bin", "/usr/lib/chromium")


@pytest.fixture(scope="module")
def browser():
    chromium = require_program(
        "chromium", install="apt-get install chromium chromium-driver", paths=_PATHS
    )
    driver_path = require_program(
        "chromedriver", install="apt-get install chromium-driver", paths=_PATHS
    )
    from selenium import webdriver  # noqa: PLC0415
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1100,900"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()


@pytest.fixture
def shots(tmp_path):
    folder = Path(os.environ.get("AZJAX_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)

    def take(driver, name):
        path = folder / f"{name}.png"
        driver.save_screenshot(str(path))
        assert path.stat().st_size > 1000
        return path

    return take


def _view(driver):
    return driver.execute_script("return view;")


def _settled(driver, timeout=120):
    """Waits until the page is idle with the human to move or the game over; its view."""
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script(
            "return document.body.dataset.state === 'ready' && view !== null "
            "&& (view.over || view.your_turn || view.human === null);"
        )
    )
    return _view(driver)


def _click(driver, point):
    driver.find_element(By.CSS_SELECTOR, f'#board .target[data-point="{point}"]').click()


def _open(driver, url):
    driver.get(url)
    return _settled(driver)


def _play_by_clicking(driver, rng, *, limit=200):
    view = _settled(driver)
    for _ in range(limit):
        if view["over"]:
            break
        move = rng.choice([m for m in view["moves"] if m["clicks"]])
        for point in move["clicks"]:
            _click(driver, point)
        view = _settled(driver)
    return view


def test_tic_tac_toe_by_clicking_with_an_illegal_click_refused(browser, served, shots):
    view = _open(browser, served("tic_tac_toe"))
    assert view["your_turn"] and browser.find_element(By.ID, "status").text.startswith("Your move")
    _click(browser, 4)
    view = _settled(browser)
    assert view["history"][0] == "5" and len(view["history"]) == 2  # the agent replied
    taken = 4
    _click(browser, taken)  # occupied: refused in the page, never sent
    assert "Illegal move" in browser.find_element(By.ID, "message").text
    assert _view(browser)["history"] == view["history"]
    shots(browser, "tic_tac_toe_illegal_click")
    view = _play_by_clicking(browser, random.Random(0))
    assert view["over"]
    result = browser.find_element(By.ID, "result").text
    assert result in ("X wins", "O wins", "draw")
    assert browser.find_element(By.ID, "download").is_displayed()
    shots(browser, "tic_tac_toe_end")


def test_connect_four_to_its_end_then_take_back(browser, served, shots):
    view = _open(browser, served("connect_four"))
    # Column targets: a click anywhere in a column drops a piece there.
    assert len(browser.find_elements(By.CSS_SELECTOR, "#board .target")) == 7
    view = _play_by_clicking(browser, random.Random(1))
    assert view["over"] and browser.find_element(By.ID, "result").text
    shots(browser, "connect_four_end")
    plies = len(view["history"])
    browser.find_element(By.ID, "undo").click()
    view = _settled(browser)
    assert not view["over"] and len(view["history"]) < plies and view["your_turn"]


def test_go_moves_and_a_pass(browser, served, shots):
    url = served("go_9x9")
    browser.get(url)
    _settled(browser)
    komi = browser.find_element(By.ID, "komi")
    komi.clear()
    komi.send_keys("6.5")
    browser.find_element(By.ID, "start").click()
    view = _settled(browser)
    game_id = view["id"]
    for point in (40, 20, 60):  # E5, C7, G3 on an empty-ish board
        if point in [m["action"] for m in view["moves"]]:
            _click(browser, point)
            view = _settled(browser)
    assert browser.find_element(By.ID, "pass").is_displayed()
    browser.find_element(By.ID, "pass").click()
    view = _settled(browser)
    assert view["id"] == game_id and "pass" in view["history"][::2]
    record = Client(url).call("GET", f"/api/games/{game_id}/record")[1]
    assert "KM[6.5]" in record
    shots(browser, "go_after_pass")
    browser.find_element(By.ID, "resign").click()
    view = _settled(browser)
    assert browser.find_element(By.ID, "result").text == "White wins by resignation"


def test_xiangqi_move_piece_then_target(browser, served, shots):
    view = _open(browser, served("xiangqi"))
    browser.find_element(By.ID, "letters").click()  # FEN letters: no Chinese font needed
    WebDriverWait(browser, 60).until(lambda d: _view(d)["piece_letters"])
    assert "C" in [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".piece-label")]
    cannon = 7 * 9 + 7  # h2 as Red sees the board (row 0 = rank 9)
    _click(browser, 4)  # Black's general: no move of Red's starts there, refused
    assert "Illegal move" in browser.find_element(By.ID, "message").text
    _click(browser, cannon)
    targets = {m["clicks"][1] for m in view["moves"] if m["clicks"][0] == cannon}
    highlighted = {
        int(e.get_attribute("data-point"))
        for e in browser.find_elements(By.CSS_SELECTOR, "#board .target.legal")
    }
    assert highlighted == targets and len(targets) > 5
    shots(browser, "xiangqi_piece_selected")
    _click(browser, 7 * 9 + 4)  # e2: the central cannon
    view = _settled(browser)
    assert view["history"][0] == "h2e2" and len(view["history"]) == 2
    moves = browser.find_element(By.ID, "moves").text.splitlines()
    assert moves[0] == "h2e2" and len(moves) == 2


def test_two_tabs_are_two_games_and_the_analysis_overlay(browser, served, shots):
    url = served("tic_tac_toe")
    first = _open(browser, url)
    _click(browser, 0)
    first = _settled(browser)
    tab = browser.current_window_handle
    browser.switch_to.new_window("tab")
    second = _open(browser, url)
    assert second["id"] != first["id"] and second["history"] == []
    browser.find_element(By.ID, "analysis").click()
    WebDriverWait(browser, 60).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#board .policy-shade")
    )
    assert browser.find_element(By.ID, "value").text.startswith("Value for X")
    shots(browser, "tic_tac_toe_analysis")
    browser.close()
    browser.switch_to.window(tab)
    assert Client(url).call("GET", f"/api/games/{first['id']}")[1]["history"] == first["history"]
