"""Takes the web board's screenshot (docs/command_line.md): a game in progress against a
trained agent, with the agent's search policy and value shown.

    python docs/make_serve_screenshot.py --workdir runs/gomoku_6x6_k4 --moves 4

starts `azjax serve` in this process, opens it in headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium), plays `--moves` moves by clicking the agent's own
favourite for the human too, turns on "Show what the agent thinks" and writes docs/serve.png.
"""

import argparse
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from azjax.apps import serve

DOCS = Path(__file__).parent


def _settled(driver):
    WebDriverWait(driver, 300).until(
        lambda d: d.execute_script(
            "return document.body.dataset.state === 'ready' && view !== null "
            "&& (view.over || view.your_turn);"
        )
    )
    return driver.execute_script("return view;")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--simulations", type=int, default=None)
    parser.add_argument("--moves", type=int, default=4, help="human moves before the picture")
    parser.add_argument("--out", default=str(DOCS / "serve.png"))
    args = parser.parse_args()

    server = serve.make_server(args.workdir, simulations=args.simulations)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1000,640"):
        options.add_argument(argument)
    with serve.Background(server) as running:
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.get(running.url)
            _settled(driver)
            driver.find_element(By.ID, "analysis").click()
            for _ in range(args.moves):
                view = _settled(driver)
                if view["over"] or view["value"] is None:
                    break
                # The human follows the agent's advice: the move its search visits most.
                move = max(view["moves"], key=lambda m: view["policy"][m["action"]])
                for point in move["clicks"]:
                    driver.find_element(
                        By.CSS_SELECTOR, f'#board .target[data-point="{point}"]'
                    ).click()
            view = _settled(driver)
            driver.save_screenshot(args.out)
            print(f"wrote {args.out}: moves {' '.join(view['history'])}, value {view['value']}")
        finally:
            driver.quit()


if __name__ == "__main__":
    main()
